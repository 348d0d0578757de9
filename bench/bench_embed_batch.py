"""Benchmark: the model's batch size, its throughput and the memory a batch adds.

The texts are the chunks of a crawl's feed (``--feed pages.jsonl`` from ``scrapy crawl ... -O``
with embedding off; its pages' ``chunks``), embedded as the pipeline embeds them (context line +
chunk). Each (batch size, round) is a fresh child process with Harvester's malloc tuning, so its
peak RSS is its own: the model loaded, then the peak after encoding every text. Batch sizes
alternate order between rounds, so load on the machine falls on each alike.

    .venv/bin/python bench/bench_embed_batch.py --feed pages.jsonl [--sizes 16 32 64] [--rounds 2]
        [--limit 600] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CHILD = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from harvester.memory import tune_malloc
tune_malloc()
from harvester.config.spec import defaults
from harvester.embedding.models import load_backend

def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

texts = json.load(open(sys.argv[2]))
batch = int(sys.argv[3])
model = load_backend(defaults()["HARVESTER_EMBEDDING_MODEL"])
model.encode(texts[:2], batch)  # warm-up: first-call allocations are not the batch's
loaded = rss()
started = time.perf_counter()
model.encode(texts, batch)
seconds = time.perf_counter() - started
print(json.dumps({"batch": batch, "chunks": len(texts), "chunks_per_s": round(len(texts) / seconds, 2),
                  "rss_loaded_mib": round(loaded, 1), "peak_rss_mib": round(rss(), 1)}))
"""


def chunk_texts(feed: Path, limit: int) -> list[str]:
    from harvester.chunking.context import embedding_text

    texts = []
    with feed.open(encoding="utf-8") as lines:
        for line in lines:
            page = json.loads(line)
            for chunk in page.get("chunks") or []:
                texts.append(embedding_text(chunk.get("context", ""), chunk["text"]))
    return texts[:limit] if limit else texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--feed", type=Path, required=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--limit", type=int, default=600, help="chunks embedded per run (0 = all)")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    if not args.feed.is_file():
        sys.exit(f"no feed at {args.feed}")
    texts = chunk_texts(args.feed, args.limit)
    if not texts:
        sys.exit(f"{args.feed} holds no chunks (crawl with chunking on)")
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-embed-batch-{os.getpid()}.json"
    work.write_text(json.dumps(texts))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    runs: list[dict[str, Any]] = []
    try:
        for round_ in range(args.rounds):
            sizes = args.sizes if round_ % 2 == 0 else list(reversed(args.sizes))
            for size in sizes:
                load = os.getloadavg()[0]
                done = subprocess.run([sys.executable, "-c", CHILD, str(REPO), str(work), str(size)],
                                      capture_output=True, text=True, env=env, check=True, timeout=1800)
                run = {**json.loads(done.stdout.strip().splitlines()[-1]), "round": round_, "load_before": round(load, 2)}
                run["batch_mib"] = round(run["peak_rss_mib"] - run["rss_loaded_mib"], 1)
                print(json.dumps(run), flush=True)
                runs.append(run)
    finally:
        work.unlink(missing_ok=True)
    summary = {}
    for size in args.sizes:
        mine = [r for r in runs if r["batch"] == size]
        summary[size] = {"chunks_per_s": [r["chunks_per_s"] for r in mine],
                         "peak_rss_mib": max(r["peak_rss_mib"] for r in mine),
                         "batch_mib": max(r["batch_mib"] for r in mine)}
    print(json.dumps(summary, indent=1))
    if args.json_out:
        args.json_out.write_text(json.dumps({"chunks": len(texts), "runs": runs, "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
