"""Dense vectors stored as 16-bit floats (the embedded store's default) against 32-bit floats.

Scan: ``bench_engines.py``'s 35,000 points (its cached vectors of the kit's real chunks, copied and
jittered) written into one store of each datatype; each of the kit's 120 natural questions asks
both stores for its dense top 45 (ids only, as a warm search with the ranking keys in memory
asks), alternating query by query: the store's dense scan, p50 and p95.

Ranking: each crawl's store (DIR/CORPUS/qdrant, as ``bench_retrieval.py --workdir DIR`` leaves it)
copied point by point into a store of each datatype; every question of the corpus's sets searched
in the three modes (k 10) on both copies: how many result lists differ, and R@5 / MRR@10 per set,
mode and datatype.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_vector_datatype.py --workdir DIR
        [--corpora flask,scrapy,requests,django] [--json-out bench/results/vector_datatype.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np
import qdrant_edge as edge

from bench.bench_engines import build_points, questions, real_chunks
from bench.bench_retrieval import OWN_QUESTIONS, OWN_ROOTS, QUESTIONS, load_module, question_file
from harvester.index.engines import edge as edge_module
from harvester.index.engines.edge import EdgeStore
from harvester.index.search import MODES, search

DATATYPES = {"float16": edge.VectorStorageDatatype.Float16, "float32": edge.VectorStorageDatatype.Float32}
COLLECTION = "harvester"


def store_of(datatype: str, path: Path, vector: str, dimension: int) -> EdgeStore:
    """A new store at ``path`` whose collection keeps its dense vectors as ``datatype``."""
    default = edge_module.DENSE_DATATYPE
    edge_module.DENSE_DATATYPE = DATATYPES[datatype]
    try:
        store = EdgeStore(path)
        store.ensure_collection(COLLECTION, vector, dimension)
    finally:
        edge_module.DENSE_DATATYPE = default
    return store


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2)}


def scan(embedder, cache: Path, work: Path, total: int) -> dict:  # type: ignore[no-untyped-def]
    chunks = real_chunks()
    vectors = np.load(cache) if cache.is_file() else None
    if vectors is None or vectors.shape[0] != len(chunks):
        vectors = embedder.encode([c["text"] for c in chunks], batch_size=32)
        np.save(cache, vectors)
    points = build_points(chunks, vectors, total, embedder.vector_name)
    stores = {}
    for datatype in DATATYPES:
        stores[datatype] = store_of(datatype, work / f"scan-{datatype}", embedder.vector_name, embedder.dimension)
        for i in range(0, len(points), 256):
            stores[datatype].upsert(COLLECTION, points[i:i + 256])
    qs = questions()
    random.Random(1).shuffle(qs)
    times: dict[str, list[float]] = {datatype: [] for datatype in DATATYPES}
    tops: dict[str, list[list[str]]] = {datatype: [] for datatype in DATATYPES}
    for text in qs[:120]:
        query = embedder.encode([text], batch_size=1)[0].tolist()
        for datatype, store in stores.items():
            request = edge.QueryRequest(limit=45, query=edge.Query.Nearest(query, using=embedder.vector_name),
                                        with_vector=False, with_payload=False)
            start = time.perf_counter()
            found = store._run(COLLECTION, lambda shard, r=request: shard.query(r))
            times[datatype].append(time.perf_counter() - start)
            tops[datatype].append([str(point.id) for point in found[:10]])
    for store in stores.values():
        store.close()
    same = sum(a == b for a, b in zip(tops["float16"], tops["float32"], strict=True))
    return {"points": total, "queries": len(times["float16"]),
            **{datatype: percentiles(values) for datatype, values in times.items()},
            "p50_ratio": round(statistics.median(times["float16"]) / statistics.median(times["float32"]), 3),
            "same_top10": same}


def ranking(embedder, workdir: Path, corpus: str, work: Path, scorer) -> dict:  # type: ignore[no-untyped-def]
    files = [question_file(corpus)]
    if corpus in OWN_ROOTS:
        files += sorted(p for p in OWN_QUESTIONS.glob(f"{corpus}_*.jsonl"))
    match = scorer.common.norm_path if corpus in OWN_ROOTS else scorer.PathMatcher(corpus)
    source = EdgeStore(workdir / corpus / "qdrant")
    copies = {datatype: store_of(datatype, work / f"{corpus}-{datatype}", embedder.vector_name, embedder.dimension)
              for datatype in DATATYPES}
    batch = []
    for point in source.points(COLLECTION):
        batch.append(point)
        if len(batch) == 512:
            for store in copies.values():
                store.upsert(COLLECTION, batch)
            batch = []
    for store in copies.values():
        store.upsert(COLLECTION, batch)
    source.close()
    result: dict = {"sets": {}}
    compared = differ = 0
    for path in files:
        figures: dict = {}
        for q in scorer.load_questions(str(path)):
            answers = {match(a) for a in q["answers"]}
            for mode in MODES:
                urls = {}
                for datatype, store in copies.items():
                    urls[datatype] = [hit["url"] for hit in search(store, COLLECTION, embedder, q["query"], 10, mode)]
                    paths: list[str] = []
                    for url in urls[datatype]:
                        if match(url) not in paths:
                            paths.append(match(url))
                    rank = scorer.first_rank(paths, answers, 10)
                    figures.setdefault(f"{mode}/{datatype}", []).append(rank)
                compared += 1
                differ += urls["float16"] != urls["float32"]
        result["sets"][path.stem] = {
            key: {"r5": round(sum(1 for r in ranks if r and r <= 5) / len(ranks), 3),
                  "mrr": round(sum(1 / r for r in ranks if r) / len(ranks), 3)}
            for key, ranks in figures.items()}
    for store in copies.values():
        store.close()
    result.update(searches_compared=compared, lists_that_differ=differ)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--corpora", default="flask,scrapy,requests,django")
    parser.add_argument("--points", type=int, default=35000)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "harvester-bench-engines.npy")
    parser.add_argument("--json-out", type=Path, default=REPO / "bench" / "results" / "vector_datatype.json")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from scrapy.utils.project import get_project_settings

    from harvester.commands.search import index_settings
    from harvester.embedding.query import load_query_embedder

    embedder = load_query_embedder(index_settings(get_project_settings()))
    scorer = load_module("harvester_eval_questions", QUESTIONS / "score_questions.py")
    out: dict = {"date": str(date.today()), "load_before": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory(prefix="bench-datatype-") as work:
        out["scan"] = scan(embedder, args.cache, Path(work), args.points)
        print(json.dumps(out["scan"]), flush=True)
        out["ranking"] = {}
        for corpus in args.corpora.split(","):
            out["ranking"][corpus] = ranking(embedder, args.workdir, corpus, Path(work), scorer)
            print(corpus, json.dumps(out["ranking"][corpus]), flush=True)
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    args.json_out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.json_out}")


if __name__ == "__main__":
    main()
