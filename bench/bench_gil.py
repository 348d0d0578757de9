"""Benchmark: how much the model slows down beside a thread that extracts pages without pause.

The model encodes the same texts twice in this process, alone and beside a Python thread running
``extract_page`` over the Flask docs in a loop; the ratio shows what the interpreter lock costs a
model that runs in the crawler's process (HARVESTER_EMBEDDING_PROCESS=0).

    .venv/bin/python bench/bench_gil.py [--threads 1] [--texts 600]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harvester.embedding.folder import DEFAULT_MODEL  # noqa: E402
from harvester.embedding.models import load_embedder  # noqa: E402
from harvester.extract.page import NoContent, extract_page  # noqa: E402

FLASK = Path("/usr/share/doc/python-flask-doc/html")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    parser.add_argument("--texts", type=int, default=600)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    embedder = load_embedder(DEFAULT_MODEL)
    pages = [(path.read_text(errors="replace"), f"http://docs/{path.name}") for path in sorted(FLASK.rglob("*.html"))]
    texts: list[str] = []
    for html, url in pages:
        try:
            markdown = extract_page(html, url).markdown
        except NoContent:
            continue
        texts += [markdown[i:i + 1200] for i in range(0, len(markdown), 1200)]
    texts = texts[:args.texts]
    embedder.encode(texts[:16], batch_size=16)  # warm-up

    started = time.perf_counter()
    embedder.encode(texts, batch_size=64)
    alone = time.perf_counter() - started

    stop = threading.Event()

    def extract_forever() -> None:
        while not stop.is_set():
            for html, url in pages:
                if stop.is_set():
                    break
                try:
                    extract_page(html, url)
                except NoContent:
                    pass

    busy = threading.Thread(target=extract_forever)
    busy.start()
    started = time.perf_counter()
    embedder.encode(texts, batch_size=64)
    beside = time.perf_counter() - started
    stop.set()
    busy.join()
    print(f"torch threads {torch.get_num_threads()}: alone {len(texts) / alone:.1f} texts/s, "
          f"beside an extracting thread {len(texts) / beside:.1f} texts/s, ratio {alone / beside:.2f}")


if __name__ == "__main__":
    main()
