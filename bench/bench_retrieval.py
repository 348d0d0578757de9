"""Retrieval quality of each search mode on the public corpora, and the tuning of the fusion.

For each corpus: the `docs` spider crawls it (every pipeline) into a fresh local Qdrant; the public
scorer writes its query set (`score.py --queries-out`); every query then runs in this process, once
per mode and fusion setting, and is matched exactly as the scorer matches (its own `match_path`).
Running in-process makes a grid of settings affordable; `bench_pipeline.py --score` checks the
chosen default through the real `scrapy search` command.

    .venv/bin/python bench/bench_retrieval.py [--corpora flask,requests,scrapy] [--queries 100] [--grid]
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_pipeline import EVAL, ROOTS  # noqa: E402
from harvester.embedding.folder import DEFAULT_MODEL  # noqa: E402
from harvester.embedding.models import load_embedder  # noqa: E402
from harvester.index.search import SearchTuning, search  # noqa: E402
from tests.crawl import crawl  # noqa: E402
from tests.sitesrv import SiteServer  # noqa: E402


def scorer_module():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(EVAL))
    spec = importlib.util.spec_from_file_location("harvester_eval_score", EVAL / "score.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CachedQueries:
    """The embedder, with each query embedded once however many settings are tried."""

    def __init__(self, embedder) -> None:  # type: ignore[no-untyped-def]
        self._embedder = embedder
        self._vectors: dict[str, object] = {}
        self.vector_name = embedder.vector_name

    def encode(self, texts, batch_size):  # type: ignore[no-untyped-def]
        key = texts[0]
        if key not in self._vectors:
            self._vectors[key] = self._embedder.encode(texts, batch_size=batch_size)
        return self._vectors[key]


def evaluate(client, embedder, queries, matcher, mode, tuning) -> dict[str, float]:  # type: ignore[no-untyped-def]
    ranks = []
    for query in queries:
        hits = search(client, "harvester", embedder, query["query"], 5, mode, tuning)
        paths = [matcher(hit["url"]) for hit in hits]
        ranks.append(paths.index(query["expected"]) + 1 if query["expected"] in paths else None)
    n = len(ranks)
    return {"recall_at_5": round(sum(r is not None for r in ranks) / n, 3),
            "mrr": round(sum(1 / r for r in ranks if r) / n, 3)}


def configurations(grid: bool) -> list[tuple[str, SearchTuning]]:
    configs = [("dense", SearchTuning()), ("sparse", SearchTuning()), ("hybrid", SearchTuning()),
               ("hybrid", SearchTuning(depth=40, dense_weight=1.0, sparse_weight=1.0, rrf_k=60))]
    if grid:
        for depth, weight, k in itertools.product((20, 40), (1.0, 1.5, 2.0), (3, 5, 10)):
            configs.append(("hybrid", SearchTuning(depth=depth, sparse_weight=weight, rrf_k=k)))
        for fusion, depth, weight in itertools.product(("minmax", "dbsf"), (10, 20, 40), (1.0, 1.5, 2.0, 3.0)):
            configs.append(("hybrid", SearchTuning(depth=depth, sparse_weight=weight, fusion=fusion)))
    return configs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpora", default="flask,requests,scrapy")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--grid", action="store_true", help="also try a grid of fusion settings")
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--workdir", type=Path,
                        help="keep each corpus's crawl here and reuse it on the next run (tuning)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from harvester.index.engines import open_store

    scorer = scorer_module()
    embedder = CachedQueries(load_embedder(DEFAULT_MODEL))
    table: dict[str, dict[str, dict[str, float]]] = {}
    for corpus in args.corpora.split(","):
        with tempfile.TemporaryDirectory() as tmp, SiteServer(root=Path(ROOTS[corpus])) as server:
            work = args.workdir / corpus if args.workdir else Path(tmp)
            if not (work / "q.jsonl").exists():
                result = crawl("docs", server.url, work)
                assert result.returncode == 0, result.output[-2000:]
            subprocess.run([sys.executable, str(EVAL / "score.py"), corpus, str(work / "pages.jsonl"),
                            "--queries-out", str(work / "q.jsonl"), "--max-queries", str(args.queries)],
                           check=True, capture_output=True)
            queries = [json.loads(line) for line in (work / "q.jsonl").read_text().splitlines()]
            truth = [json.loads(line) for line in (EVAL / "truth" / f"{corpus}.jsonl").read_text().splitlines()]
            meta = json.loads((EVAL / "truth" / f"{corpus}.meta.json").read_text())
            known = {page["url"] for page in truth}
            aliases = meta.get("aliases", {})
            client = open_store(None, None, str(work / "qdrant"))
            for mode, tuning in configurations(args.grid):
                label = (f"{mode} {tuning.fusion} depth={tuning.depth} w={tuning.dense_weight}/{tuning.sparse_weight}"
                         + (f" k={tuning.rrf_k}" if tuning.fusion == "rrf" else ""))
                figures = evaluate(client, embedder, queries, lambda u: scorer.match_path(u, aliases, known),
                                   mode, tuning)
                table.setdefault(label, {})[corpus] = figures
                print(f"{corpus:9} {label:45} recall@5={figures['recall_at_5']:.3f} mrr={figures['mrr']:.3f}",
                      flush=True)
            client.close()
    print("\n| mode | " + " | ".join(f"{c} R@5 / MRR" for c in args.corpora.split(",")) + " |")
    for label, per_corpus in table.items():
        cells = [f"{v['recall_at_5']:.3f} / {v['mrr']:.3f}" for v in per_corpus.values()]
        print(f"| {label} | " + " | ".join(cells) + " |")
    if args.json_out:
        args.json_out.write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
