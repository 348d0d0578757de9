"""The natural questions through `scrapy search`'s own code path, per mode (default hybrid, `--dense`,
`--sparse`), on a crawl's real store: R@1/5/10 and MRR@10 overall and per kind, and whether the
default is at least as good as the better half in R@5 and MRR.

One warm process runs `Command._search` (the store the settings name, the query embedder, `search()`)
for every question and mode, as `scrapy search --json -k 10 [--dense|--sparse] -- QUERY` does in a
process of its own. ``fusion_losses`` lists the questions whose answer the default ranks below the
better half's rank across the first or the fifth place (a half ranks it first or in its top 5, the
default does not); `score_questions.py --search-cmd` gives the same ranks, slower by a process start
per question. Crawls: `bench_retrieval.py --workdir DIR` leaves DIR/CORPUS/qdrant.

    .venv/bin/python bench/bench_search_modes.py --workdir DIR [--corpora flask,scrapy,requests,django]
        [--json-out bench/results/search_modes.json [--update]]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_retrieval import EVAL, KINDS, OWN_ROOTS, QUESTIONS, load_module, question_file
from harvester.commands.search import Command, index_settings, open_settings_store

MODES = {"default": "hybrid", "dense": "dense", "sparse": "sparse"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpora", default="flask,scrapy,requests,django")
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--update", action="store_true", help="keep the other corpora of an existing --json-out")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from scrapy.utils.project import get_project_settings

    import harvester.embedding.query

    # The query model once for the whole run, as a `scrapy search` process loads it once.
    embedder = harvester.embedding.query.load_query_embedder(index_settings(get_project_settings()))
    harvester.embedding.query.load_query_embedder = lambda settings: embedder
    scorer = load_module("harvester_eval_questions", QUESTIONS / "score_questions.py")
    assert EVAL.exists()
    out: dict = {"corpora": {}}
    if args.update and args.json_out and args.json_out.exists():
        out = json.loads(args.json_out.read_text())
    for corpus in args.corpora.split(","):
        questions = scorer.load_questions(str(question_file(corpus)))
        match = scorer.common.norm_path if corpus in OWN_ROOTS else scorer.PathMatcher(corpus)
        settings = index_settings(get_project_settings())
        settings.set("HARVESTER_QDRANT_PATH", str(args.workdir / corpus / "qdrant"))
        store = open_settings_store(settings)
        try:
            stored = {match(point.payload["metadata"]["source_url"]) for point in store.points(settings.get("HARVESTER_QDRANT_COLLECTION"))}
        finally:
            store.close()
        # A question none of whose answer pages is stored (a partial crawl) is not asked.
        unanswerable = [q["id"] for q in questions if not stored & {match(a) for a in q["answers"]}]
        questions = [q for q in questions if q["id"] not in unanswerable]
        record: dict = {"questions": str(question_file(corpus).relative_to(REPO.parent)), "modes": {},
                        "pages": len(stored), "questions_without_a_stored_answer": unanswerable}
        per_question: dict[str, list[int | None]] = {}
        for label, mode in MODES.items():
            started = time.perf_counter()
            ranks: dict[str, list[int | None]] = {"all": []}
            misses = []
            for question in questions:
                hits = Command._search(None, settings, question["query"], 10, None, mode, "page")  # type: ignore[arg-type]
                paths = [match(hit["url"]) for hit in hits]
                found = scorer.first_rank(paths, {match(a) for a in question["answers"]}, 10)
                for kind in ("all", question["kind"], *(("hard",) if question.get("hard") else ())):
                    ranks.setdefault(kind, []).append(found)
                if found is None or found > 5:
                    misses.append({"id": question["id"], "rank": found, "top": paths[:3]})
            per_question[label] = ranks["all"]
            record["modes"][label] = {kind: scorer.metrics(ranks[kind], 10) for kind in ("all", *KINDS) if kind in ranks}
            record["modes"][label]["outside_top5"] = misses
            record["modes"][label]["seconds"] = round(time.perf_counter() - started, 1)
        modes = record["modes"]
        record["fusion_losses"] = fusion_losses(questions, per_question)
        record["default_at_least_the_better_half"] = all(
            modes["default"]["all"][m] >= max(modes["dense"]["all"][m], modes["sparse"]["all"][m]) for m in ("r5", "mrr"))
        out["corpora"][corpus] = record
        print(f"\n{corpus}: | kind | n | " + " | ".join(f"{label} R@1 / R@5 / R@10 / MRR" for label in MODES) + " |")
        for kind in ("all", *KINDS):
            if kind in modes["default"]:
                print(f"| {kind} | {modes['default'][kind]['n']} | " + " | ".join(
                    "{r1:.3f} / {r5:.3f} / {r10:.3f} / {mrr:.3f}".format(**modes[label][kind]) for label in MODES) + " |")
        print(f"{corpus}: default >= better half in R@5 and MRR: {record['default_at_least_the_better_half']}", flush=True)
        for loss in record["fusion_losses"]:
            print(f"  fusion loss {loss['id']} ({loss['kind']}): default {loss['default']}, dense {loss['dense']}, sparse {loss['sparse']}")
    if args.json_out:
        args.json_out.write_text(json.dumps(out, indent=1))


def fusion_losses(questions: list[dict], ranks: dict[str, list[int | None]]) -> list[dict]:
    """The questions where the default ranks the answer below the better half across the first or
    the fifth place: the halves' ranks and the default's (None: not in the first 10)."""
    losses = []
    for question, default, dense, sparse in zip(questions, ranks["default"], ranks["dense"], ranks["sparse"], strict=True):
        better, fused = min(r or 11 for r in (dense, sparse)), default or 11
        if any(better <= place < fused for place in (1, 5)):
            losses.append({"id": question["id"], "kind": question["kind"], "default": default, "dense": dense, "sparse": sparse})
    return losses


if __name__ == "__main__":
    main()
