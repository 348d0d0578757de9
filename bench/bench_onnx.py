"""Benchmark the ONNX Runtime embedding backend (fp32 and int8) against the torch one.

On the chunk texts of the Flask docs (crawled from /usr/share/doc/python-flask-doc/html without
embedding), in one run:

* speed: chunks/s of torch fp32 (sentence-transformers) with 1 and 2 torch threads, and of ONNX
  fp32 and ONNX int8 with 1 and 2 intra-op threads (best of ``--repeats`` timed passes);
* agreement with torch: mean (and minimum) cosine between the two backends' vectors of each chunk,
  and top-10 neighbour overlap (for ``--sample`` chunks, |top10_torch & top10_onnx| / 10);
* retrieval: recall@5 and MRR of dense search (cosine in numpy) on the public scorer's queries
  (``/work/shared/eval/score.py flask FEED --queries-out``), a query's rank being the position of
  the first chunk whose page URL path equals the query's expected path.

    HF_HUB_OFFLINE=1 .venv/bin/python -m bench.bench_onnx [--json-out FILE] [--limit N]

Speeds on a shared machine are noisy: compare rows of one run, not runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

FLASK_DOCS = Path("/usr/share/doc/python-flask-doc/html")
SCORER = Path("/work/shared/eval/score.py")
MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def url_path(url: str) -> str:
    """A URL's path, normalised: no scheme/host/query, ``x/index.html`` -> ``x/``, ``""`` -> ``/``."""
    path = urlsplit(url).path if "://" in url or url.startswith("//") else url.split("?", 1)[0].split("#", 1)[0]
    if path.endswith("/index.html"):
        path = path[: -len("index.html")]
    elif path == "index.html":
        path = "/"
    if not path.startswith("/"):
        path = "/" + path
    return path


def crawl_chunks(workdir: Path) -> tuple[list[str], list[str], Path]:
    """Chunk texts (context + text) and their pages' URL paths, and the feed file."""
    from tests.crawl import NO_EMBEDDING
    from tests.crawl import cli_crawl as crawl
    from tests.servers.sitesrv import SiteServer

    feed = workdir / "pages.jsonl"
    if feed.is_file():  # --workdir reuse
        items = [json.loads(line) for line in feed.read_text().splitlines() if line.strip()]
    else:
        with SiteServer(root=FLASK_DOCS) as server:
            result = crawl("docs", server.url, workdir, settings=NO_EMBEDDING)
        if result.returncode != 0 or not result.items:
            raise SystemExit(f"crawl failed (rc={result.returncode}):\n{result.output[-3000:]}")
        items = result.items
    texts, paths = [], []
    for item in items:
        for chunk in item.get("chunks") or []:
            texts.append(chunk["context"] + "\n\n" + chunk["text"] if chunk.get("context") else chunk["text"])
            paths.append(url_path(item["url"]))
    return texts, paths, feed


def scorer_queries(feed: Path, workdir: Path, limit: int) -> list[dict[str, Any]]:
    out = workdir / "queries.jsonl"
    subprocess.run(
        [sys.executable, str(SCORER), "flask", str(feed), "--queries-out", str(out), "--max-queries", str(limit)],
        check=True, capture_output=True, text=True,
    )
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def timed(encode, texts: list[str], batch_size: int, repeats: int) -> float:
    """Best chunks/s over ``repeats`` full passes (after a warm-up)."""
    encode(texts[:batch_size], batch_size)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        encode(texts, batch_size)
        best = min(best, time.perf_counter() - start)
    return len(texts) / best


def neighbour_overlap(ref: np.ndarray, other: np.ndarray, sample: np.ndarray, k: int = 10) -> float:
    """Mean |top-k(ref) & top-k(other)| / k over the sampled chunks (the chunk itself excluded)."""
    overlaps = []
    for i in sample:
        tops = []
        for vectors in (ref, other):
            scores = vectors @ vectors[i]
            scores[i] = -np.inf
            tops.append(set(np.argpartition(-scores, k)[:k].tolist()))
        overlaps.append(len(tops[0] & tops[1]) / k)
    return float(np.mean(overlaps))


def retrieval(chunk_vectors: np.ndarray, paths: list[str], query_vectors: np.ndarray,
              expected: list[str], k: int = 5) -> tuple[float, float]:
    """recall@k and MRR (over the whole ranking) of dense search, by page path."""
    hits, reciprocal = 0, 0.0
    path_array = np.array(paths)
    for vector, want in zip(query_vectors, expected):
        order = np.argsort(-(chunk_vectors @ vector), kind="stable")
        matches = np.nonzero(path_array[order] == want)[0]
        if matches.size:
            rank = int(matches[0]) + 1
            hits += rank <= k
            reciprocal += 1.0 / rank
    n = max(1, len(expected))
    return hits / n, reciprocal / n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json-out", help="write the results as JSON")
    parser.add_argument("--workdir", help="crawl here (reused if it holds pages.jsonl); default: a temp dir")
    parser.add_argument("--cache-dir", help="ONNX export cache; default: WORKDIR/onnx")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2, help="timed passes per configuration (best kept)")
    parser.add_argument("--limit", type=int, default=0, help="time on the first N chunks only (0: all)")
    parser.add_argument("--sample", type=int, default=200, help="chunks for the neighbour overlap")
    parser.add_argument("--max-queries", type=int, default=100)
    parser.add_argument("--threads", default="1,2", help="thread counts to time")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch

    from harvester.embedding.models import load_embedder
    from harvester.embedding.onnx import load_onnx_embedder

    tmp = None
    if args.workdir:
        workdir = Path(args.workdir)
        workdir.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="bench-onnx-")
        workdir = Path(tmp.name)
    cache_dir = args.cache_dir or str(workdir / "onnx")
    threads = [int(t) for t in args.threads.split(",") if t.strip()]

    started = time.perf_counter()
    texts, paths, feed = crawl_chunks(workdir)
    queries = scorer_queries(feed, workdir, args.max_queries)
    print(f"{len(texts)} chunks from {len(set(paths))} pages, {len(queries)} queries "
          f"(crawl {time.perf_counter() - started:.0f}s)", file=sys.stderr)
    timing_texts = texts[: args.limit] if args.limit else texts

    torch_embedder = load_embedder(MODEL, "cpu")
    started = time.perf_counter()
    backends: dict[str, Any] = {"torch": torch_embedder}
    for quantized in (False, True):
        key = "onnx-int8" if quantized else "onnx"
        backends[key] = {t: load_onnx_embedder(MODEL, quantized=quantized, cache_dir=cache_dir, threads=t)
                         for t in threads}
    print(f"ONNX export/load {time.perf_counter() - started:.0f}s", file=sys.stderr)

    rows: list[dict[str, Any]] = []
    vectors: dict[str, np.ndarray] = {}
    query_text = [q["query"] for q in queries]
    expected = [url_path(q["expected"]) for q in queries]
    torch_threads = torch.get_num_threads()
    for key, backend in backends.items():
        speeds = {}
        for t in threads:
            if key == "torch":
                torch.set_num_threads(t)
                encode = backend.encode
            else:
                encode = backend[t].encode
            speeds[t] = timed(encode, timing_texts, args.batch_size, args.repeats)
            print(f"{key} threads={t}: {speeds[t]:.1f} chunks/s", file=sys.stderr)
        torch.set_num_threads(max(threads))
        embedder = backend if key == "torch" else backend[max(threads)]
        vectors[key] = embedder.encode(texts, args.batch_size)
        qvec = embedder.encode(query_text, args.batch_size)
        recall, mrr = retrieval(vectors[key], paths, qvec, expected)
        rows.append({"backend": key, "speed": speeds, "recall@5": recall, "mrr": mrr})
    torch.set_num_threads(torch_threads)

    rng = np.random.default_rng(0)
    sample = rng.choice(len(texts), size=min(args.sample, len(texts)), replace=False)
    for row in rows:
        if row["backend"] == "torch":
            continue
        cos = (vectors["torch"] * vectors[row["backend"]]).sum(axis=1)
        row["cosine_mean"] = float(cos.mean())
        row["cosine_min"] = float(cos.min())
        row["top10_overlap"] = neighbour_overlap(vectors["torch"], vectors[row["backend"]], sample)

    header = ["backend"] + [f"chunks/s {t}t" for t in threads] + [
        "cos vs torch (mean / min)", "top-10 overlap", "recall@5", "MRR"]
    print(f"\nFlask docs: {len(texts)} chunks ({len(timing_texts)} timed, batch {args.batch_size}, best of "
          f"{args.repeats}), {len(queries)} queries; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        agreement = ["1 (reference)", "1 (reference)"] if row["backend"] == "torch" else [
            f"{row['cosine_mean']:.5f} / {row['cosine_min']:.4f}", f"{row['top10_overlap']:.3f}"]
        cells = [row["backend"], *(f"{row['speed'][t]:.1f}" for t in threads), *agreement,
                 f"{row['recall@5']:.3f}", f"{row['mrr']:.3f}"]
        print("| " + " | ".join(cells) + " |")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({
            "chunks": len(texts), "timed_chunks": len(timing_texts), "queries": len(queries),
            "batch_size": args.batch_size, "repeats": args.repeats, "cpus": os.cpu_count(),
            "rows": [{**r, "speed": {str(t): v for t, v in r["speed"].items()}} for r in rows],
        }, indent=2) + "\n")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
