"""Benchmark: how close end-to-end ingestion comes to the embedding model's own speed.

In one run, on one site served on loopback (default: Debian's Flask docs):
  1. crawl + extract + chunk with embedding off       -> pages/s
  2. the model alone on exactly the chunks of step 1  -> chunks/s
  3. the whole pipeline into a fresh local Qdrant     -> chunks/s
and prints end-to-end / model-alone. Optionally (--score) runs the public scorer on the feed of
step 3, with retrieval through `scrapy search`.

    .venv/bin/python bench/bench_pipeline.py [--corpus flask] [--spider docs] [--score] [--json-out F]
        [--threads 0 1] [--process 1 0] [--batch-sizes 16 64] [--set NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harvester.chunking.context import embedding_text
from harvester.config.spec import defaults
from tests.crawl import NO_EMBEDDING
from tests.crawl import cli_crawl as crawl
from tests.servers.sitesrv import SiteServer

ROOTS = {
    "flask": "/usr/share/doc/python-flask-doc/html",
    "requests": "/usr/share/doc/python-requests-doc/html",
    "scrapy": "/usr/share/doc/python-scrapy-doc/html",
}
EVAL = REPO.parent / "shared" / "eval"


MODEL_ALONE = """
import json, sys, time
from harvester.embedding.folder import DEFAULT_MODEL
from harvester.embedding.models import load_backend, resolve_backend
texts, batch_size, threads, backend = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
if threads and resolve_backend(DEFAULT_MODEL, backend) == "torch":
    import torch
    torch.set_num_threads(threads)
embedder = load_backend(DEFAULT_MODEL, backend=backend, threads=threads)
embedder.encode(texts[:8], batch_size=8)  # warm-up
started = time.perf_counter()
embedder.encode(texts, batch_size=batch_size)
print(len(texts) / (time.perf_counter() - started))
"""


def model_alone(texts: list[str], batch_size: int, threads: int, work: Path, backend: str) -> float:
    """Chunks per second of the model on ``texts`` in a fresh process of its own, loading
    excluded; ``threads`` model threads (0 = the backend's default), as HARVESTER_EMBEDDING_THREADS;
    ``backend`` as HARVESTER_EMBEDDING_BACKEND."""
    path = work / "texts.json"
    path.write_text(json.dumps(texts))
    done = subprocess.run([sys.executable, "-c", MODEL_ALONE, str(path), str(batch_size), str(threads), backend],
                          cwd=REPO, capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def _stat(log: str, key: str) -> float:
    """A number from the stats dump Scrapy logs when the crawl closes (0 when absent)."""
    found = re.search(rf"'{re.escape(key)}': ([0-9.]+)", log)
    return float(found.group(1)) if found else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="flask", choices=sorted(ROOTS))
    parser.add_argument("--spider", default="docs", choices=["docs", "site", "sitemap"])
    parser.add_argument("--score", action="store_true", help="run the public scorer with retrieval")
    parser.add_argument("--queries", type=int, default=40, help="retrieval queries for --score")
    parser.add_argument("--threads", type=int, nargs="+", default=[0, 1],
                        help="HARVESTER_EMBEDDING_THREADS values to run end to end (0 = the backend's default)")
    parser.add_argument("--process", type=int, nargs="+", default=[1, 0],
                        help="HARVESTER_EMBEDDING_PROCESS values to run end to end")
    default_batch = defaults()["HARVESTER_EMBEDDING_BATCH_SIZE"]
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[default_batch],
                        help=f"HARVESTER_EMBEDDING_BATCH_SIZE values, for the model alone and end to end "
                             f"(default {default_batch})")
    parser.add_argument("--backend", default=defaults()["HARVESTER_EMBEDDING_BACKEND"],
                        help="HARVESTER_EMBEDDING_BACKEND, for the model alone and end to end")
    parser.add_argument("--torch-baseline", action="store_true",
                        help="also time the torch model alone (the ratio over it is reported beside)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                        help="a Scrapy setting for every crawl of the run (A/B runs of a default)")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    overrides = dict(override.split("=", 1) for override in args.overrides)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    results: dict[str, object] = {"corpus": args.corpus, "spider": args.spider, "cpus": os.cpu_count(),
                                  "backend": args.backend, **({"settings": overrides} if overrides else {})}

    with tempfile.TemporaryDirectory() as tmp, SiteServer(root=Path(ROOTS[args.corpus])) as server:
        work = Path(tmp)
        extract_only = crawl(args.spider, server.url, work / "extract", settings={**NO_EMBEDDING, **overrides})
        assert extract_only.returncode == 0, extract_only.output[-2000:]
        pages = extract_only.report["pages_stored"]
        seconds = extract_only.report["elapsed_seconds"]
        # Exactly what the pipeline embeds: the context line, then the chunk's text.
        texts = [embedding_text(c.get("context", ""), c["text"])
                 for item in extract_only.items for c in item["chunks"]]
        results["crawl_extract_chunk"] = {"pages": pages, "chunks": len(texts), "seconds": seconds,
                                          "pages_per_s": round(pages / seconds, 2)}

        # Per batch size: the model alone, then end to end, close in time (the machine's load drifts).
        model_rates: dict[tuple[int, int], float] = {}
        for batch in args.batch_sizes:
            suffix = "" if args.batch_sizes == [default_batch] else f"_batch_{batch}"
            for threads in args.threads:
                model_rates[threads, batch] = model_alone(texts, batch, threads, work, args.backend)
                results[f"model_alone_threads_{threads}{suffix}"] = {
                    "chunks": len(texts), "batch_size": batch, "chunks_per_s": round(model_rates[threads, batch], 2)}
            best_model = max(rate for (_, b), rate in model_rates.items() if b == batch)
            if args.torch_baseline:
                torch_rate = model_alone(texts, batch, 0, work, "torch")
                results[f"model_alone_torch{suffix}"] = {"chunks": len(texts), "batch_size": batch,
                                                          "chunks_per_s": round(torch_rate, 2)}
            for in_process, threads in itertools.product(args.process, args.threads):
                full = crawl(args.spider, server.url, work / f"full-{in_process}-{threads}-{batch}",
                             settings={"HARVESTER_EMBEDDING_THREADS": threads,
                                       "HARVESTER_EMBEDDING_BACKEND": args.backend,
                                       "HARVESTER_EMBEDDING_PROCESS": in_process,
                                       "HARVESTER_EMBEDDING_BATCH_SIZE": batch, **overrides})
                assert full.returncode == 0, full.output[-2000:]
                ready = _stat(full.output, "harvester/embedding/model_ready_seconds")
                seconds = full.report["elapsed_seconds"] - ready
                e2e_rate = full.report["chunks_stored"] / seconds
                model_rate = model_rates[threads, batch]
                results[f"end_to_end_process_{in_process}_threads_{threads}{suffix}"] = {
                    "pages": full.report["pages_stored"], "chunks": full.report["chunks_stored"], "batch_size": batch,
                    "seconds_from_spider_open": full.report["elapsed_seconds"], "model_ready_after_s": ready,
                    "seconds_from_model_ready": round(seconds, 2), "chunks_per_s": round(e2e_rate, 2),
                    "ratio_including_model_load": round(
                        full.report["chunks_stored"] / full.report["elapsed_seconds"] / model_rate, 3),
                    "ratio_over_model_same_threads": round(e2e_rate / model_rate, 3),
                    "ratio_over_best_model": round(e2e_rate / best_model, 3),
                    **({"ratio_over_torch_model": round(e2e_rate / torch_rate, 3)} if args.torch_baseline else {}),
                    "peak_rss_mib": full.report.get("peak_rss_mib")}
        best = max(v["ratio_over_best_model"] for k, v in results.items() if k.startswith("end_to_end_"))
        results["ratio_end_to_end_over_model"] = best

        if args.score:
            first = work / f"full-{args.process[0]}-{args.threads[0]}-{args.batch_sizes[0]}"
            env = {**os.environ, "HARVESTER_QDRANT_PATH": str(first / "qdrant")}
            score = subprocess.run(
                [sys.executable, str(EVAL / "score.py"), args.corpus, str(first / "pages.jsonl"),
                 "--search-cmd", f"{sys.executable} -m scrapy search --json -k 5 {{query}}",
                 "--max-queries", str(args.queries), "--json-out", str(work / "score.json")],
                cwd=REPO, env=env, capture_output=True, text=True, check=True,
            )
            results["scorer_summary"] = score.stdout.strip().splitlines()[-1]
            results["scorer"] = json.loads((work / "score.json").read_text())

    summary = {k: v for k, v in results.items() if k != "scorer"}
    print(json.dumps(summary, indent=1))
    print(f"end-to-end / model-alone = {results['ratio_end_to_end_over_model']}")
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
