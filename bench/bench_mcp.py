"""The MCP server's calls at 35,000 chunks: ``fetch`` of a 300 KB page (each part, and the whole page
part after part), ``list_pages`` of a site, ``list_sources``, and the warm hybrid ``search`` with the
ONNX query encoder, all through ``SearchService`` as the server calls it.

Collection: ``--points`` chunks of pages written with the index's own payloads
(``page_payloads``: each page's Markdown on its first chunk, anchors, LlamaIndex's node fields),
1,400 pages on 8 sites plus one page of 300 KB of Markdown. The text is real documentation words
(the public kit's truth files, else a fixed vocabulary) shuffled; dense vectors are random unit
vectors (ranking quality is bench_retrieval's; here only the latency of the calls), BM25 vectors
are computed from each chunk's text.

    .venv/bin/python bench/bench_mcp.py [--points 35000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from harvester.embedding.folder import DEFAULT_MODEL, vector_name
from harvester.index import search as search_module
from harvester.index.engines import open_store
from harvester.index.search import RANK_KEYS, UNUSED_KEYS
from harvester.index.store import chunk_point, page_payloads
from harvester.items import PageItem
from harvester.mcp_server.core import SearchService

EVAL = REPO.parent / "shared" / "eval"
QUESTIONS = ["how do I register a blueprint", "configure logging for requests", "session cookie lifetime",
             "retry failed downloads", "url routing with converters", "timeout for http requests",
             "item pipeline order", "template inheritance blocks", "streaming large responses",
             "proxy settings per request"]


def vocabulary() -> list[str]:
    words: list[str] = []
    for truth in sorted((EVAL / "truth").glob("*.jsonl")):
        for line in truth.read_text(encoding="utf-8").splitlines()[:200]:
            words += [w for block in json.loads(line).get("blocks", []) for w in str(block[-1]).split()]
    return words or ["app", "route", "view", "request", "response", "session", "config", "blueprint",
                     "template", "url", "cookie", "header", "timeout", "proxy", "pipeline", "spider"]


def build(path: str, points: int, words: list[str], rng: random.Random) -> tuple[SearchService, str]:
    store = open_store(None, None, path)
    name = vector_name(DEFAULT_MODEL)
    store.ensure_collection("c", name, 384)
    pages = 1400
    per_page = max(1, points // pages)
    big_url = ""
    for p in range(pages + 1):
        site = f"docs{p % 8}.example.org"
        if p == pages:  # the large page, as an API reference
            lines = [f"## Function {i}\n\n" + " ".join(rng.choices(words, k=30)) + "\n" for i in range(1500)]
            markdown, count, url = "# API\n\n" + "\n".join(lines), per_page, f"https://{site}/api/"
            big_url = url
        else:
            sections = [f"## Part {i}\n\n" + " ".join(rng.choices(words, k=130)) + "\n" for i in range(per_page)]
            markdown, count, url = "".join(sections), per_page, f"https://{site}/guide/page{p}.html"
        step = max(1, len(markdown) // count)
        chunks = [{"id": f"{p:08d}-0000-0000-0000-{i:012d}", "index": i, "text": markdown[i * step:(i + 1) * step],
                   "heading_path": ["Page", f"Part {i}"], "token_count": 150} for i in range(count)]
        item = PageItem(url=url, title=f"Page {p}", markdown=markdown, domain=site, chunks=chunks,
                        section=f"Guide > Topic {p % 12}", breadcrumbs=["Guide", f"Topic {p % 12}"],
                        anchors=[[f"Part {i}", f"part-{i}"] for i in range(count)])
        vectors = np.random.default_rng(p).normal(size=(count, 384))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.upsert("c", [chunk_point(c["id"], name, v, c["text"], payload) for c, v, payload in
                           zip(chunks, vectors, page_payloads(item, "2026-01-01T00:00:00+00:00"), strict=True)])
    from harvester.embedding.onnx import default_cache_dir
    from harvester.embedding.query import load_onnx_query_encoder

    encoder = load_onnx_query_encoder(DEFAULT_MODEL, str(default_cache_dir()))
    return SearchService(store, encoder, "c"), big_url


def timed(fn, runs: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(times[int(len(times) * 0.95) - 1], 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=35000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "mcp.json"))
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        service, big = build(tmp, args.points, vocabulary(), rng)
        build_s = time.perf_counter() - start
        size = service.fetch(big)["total_chars"]

        def whole() -> None:
            offset: int | None = 0
            while offset is not None:
                offset = service.fetch(big, offset=offset, max_chars=100_000)["next_offset"]

        questions = [QUESTIONS[i % len(QUESTIONS)] + ("" if i < len(QUESTIONS) else f" {i}")
                     for i in range(args.queries)]
        for q in questions[:5]:
            service.search(q, 5)
        # The ranking keys in memory, as the service's first search has the store read them (in a
        # thread, beside it): here waited for, so that every timed search has them.
        start = time.perf_counter()
        service.store.remember("c", RANK_KEYS)
        remember_s = time.perf_counter() - start
        # Interleaved with the same search taking whole payloads (each page's Markdown included), so
        # that a loaded machine weighs on both alike.
        searches, whole_payloads = [], []
        for q in questions:
            for keys, times in ((UNUSED_KEYS, searches), ((), whole_payloads)):
                search_module.UNUSED_KEYS = keys
                start = time.perf_counter()
                service.search(q, 5)
                times.append((time.perf_counter() - start) * 1000)
        search_module.UNUSED_KEYS = UNUSED_KEYS
        searches.sort()
        whole_payloads.sort()
        result = {
            "date": date.today().isoformat(),
            "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                     text=True, check=True).stdout.strip(),
            "cpus": os.cpu_count(),
            "load_1min": round(os.getloadavg()[0], 2),
            "points": service.store.count("c"),
            "build_s": round(build_s, 1),
            "remember_s": round(remember_s, 2),
            "big_page_chars": size,
            "fetch_first_part": timed(lambda: service.fetch(big + "#function-3"), 50),
            "fetch_whole_page_in_parts": timed(whole, 20),
            "list_pages_site": timed(lambda: service.list_pages("docs3.example.org"), 10),
            "list_sources": timed(service.list_sources, 5),
            "warm_hybrid_search_onnx": {"p50_ms": round(statistics.median(searches), 2),
                                        "p95_ms": round(searches[int(len(searches) * 0.95) - 1], 2)},
            "warm_hybrid_search_whole_payloads": {
                "p50_ms": round(statistics.median(whole_payloads), 2),
                "p95_ms": round(whole_payloads[int(len(whole_payloads) * 0.95) - 1], 2)},
        }
        service.close()
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
