"""The warm search with each point's ranking keys in memory (``Store.remember``, as `scrapy mcp`
holds them) against the same search reading them from the candidates' payloads, on crawls' real
stores: median and p95 per corpus, alternating query by query in one process, whether every
search gives the same results both ways, and what reading the keys costs (time, and memory per
point as tracemalloc counts it).

Per question of the corpus's natural set: five searches each way (hybrid k 5 and k 10 grouped by
page, hybrid k 5 ungrouped, `--dense` and `--sparse` k 5); the times are the hybrid k 5 ones
(what an assistant asks for by default). Crawls: `bench_retrieval.py --workdir DIR` leaves
DIR/CORPUS/qdrant.

    .venv/bin/python bench/bench_warm_search.py --workdir DIR [--corpora flask,scrapy,requests,django]
        [--json-out bench/results/warm_search.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import tracemalloc
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_retrieval import QUESTIONS, load_module, question_file
from harvester.commands.search import index_settings, open_settings_store
from harvester.index import search as search_module
from harvester.index.search import RANK_KEYS, search

VARIANTS = ((5, "page", "hybrid"), (10, "page", "hybrid"), (5, None, "hybrid"), (5, "page", "dense"),
            (5, "page", "sparse"))
TIMED = VARIANTS[0]


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpora", default="flask,scrapy,requests,django")
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--json-out", type=Path, default=REPO / "bench" / "results" / "warm_search.json")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from scrapy.utils.project import get_project_settings

    from harvester.embedding.query import load_query_embedder

    embedder = load_query_embedder(index_settings(get_project_settings()))
    scorer = load_module("harvester_eval_questions", QUESTIONS / "score_questions.py")
    out: dict = {"date": str(date.today()), "load_before": [round(x, 2) for x in os.getloadavg()], "corpora": {}}
    for corpus in args.corpora.split(","):
        questions = [q["query"] for q in scorer.load_questions(str(question_file(corpus)))]
        settings = index_settings(get_project_settings())
        settings.set("HARVESTER_QDRANT_PATH", str(args.workdir / corpus / "qdrant"))
        store = open_settings_store(settings)
        collection = settings.get("HARVESTER_QDRANT_COLLECTION")
        try:
            points = store.count(collection)
            start = time.perf_counter()
            store.remember(collection, RANK_KEYS)
            remember_s = time.perf_counter() - start
            # Read again under tracemalloc (slower) for what the values hold in memory.
            tracemalloc.start()
            store.remember(collection, RANK_KEYS)
            held = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            times: dict[bool, list[float]] = {True: [], False: []}
            same = compared = 0
            for query in questions:
                for k, group_by, mode in VARIANTS:
                    results = {}
                    for remembered in (True, False):
                        # Keys not asked for: the store reads each candidate's payload.
                        search_module.RANK_KEYS = RANK_KEYS if remembered else None  # type: ignore[assignment]
                        start = time.perf_counter()
                        results[remembered] = search(store, collection, embedder, query, k, mode, group_by=group_by)
                        if (k, group_by, mode) == TIMED:
                            times[remembered].append(time.perf_counter() - start)
                    search_module.RANK_KEYS = RANK_KEYS
                    compared += 1
                    same += results[True] == results[False]
        finally:
            store.close()
        row = {"points": points, "questions": len(questions),
               "remember_s": round(remember_s, 3),
               "remembered_bytes_per_point": round(held / max(points, 1)), "keys_in_memory": percentiles(times[True]),
               "keys_from_payloads": percentiles(times[False]), "searches_compared": compared, "same_results": same}
        row["p50_ratio"] = round(row["keys_in_memory"]["p50_ms"] / row["keys_from_payloads"]["p50_ms"], 3)
        out["corpora"][corpus] = row
        print(corpus, json.dumps(row), flush=True)
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    args.json_out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.json_out}")


if __name__ == "__main__":
    main()
