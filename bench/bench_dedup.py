"""What dedup finds and saves on the public corpora, and whether search results repeat a text.

For each corpus (Debian's Flask, Requests and Scrapy docs, served on loopback): the `docs` spider
crawls it through every pipeline into a fresh local Qdrant, once with the dedup defaults and, with
`--baseline`, once with near-duplicate and boilerplate detection off. Reported per run: pages
stored, aliases (exact duplicates), near duplicates, boilerplate chunk copies and their share of
all chunks, embeddings saved (boilerplate copies left out + embedding-cache hits), chunks the model
encoded, points stored and stored points whose text is stored more than once. Then the public
scorer's queries (`score.py --queries-out`) run in-process through `harvester.index.search.search`
(hybrid, k=5): the top 5 must never hold two identical chunk texts; the raw fused top 5 (before
`search` collapses identical texts) is counted too.

With `--inject`, every HTML page is served with one more section at the end of its main content,
the same support notice on every page (as many real sites have), so that boilerplate handling has
something to do on these otherwise clean builds.

    .venv/bin/python bench/bench_dedup.py [--corpora flask,requests,scrapy] [--queries 100] [--baseline] [--inject]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import harvester.index.search as search_module
from bench.bench_pipeline import EVAL, ROOTS
from bench.bench_retrieval import CachedQueries
from harvester.embedding.folder import DEFAULT_MODEL
from harvester.embedding.models import load_embedder
from tests.crawl import cli_crawl as crawl
from tests.servers.sitesrv import Route, SiteServer

DEDUP_OFF = {"HARVESTER_NEAR_DUPLICATE_THRESHOLD": "0", "HARVESTER_BOILERPLATE_MODE": "off"}


NOTICE = (
    '<section id="support-policy"><h2>Support policy</h2><div class="admonition warning">'
    '<p class="admonition-title">Warning</p><p>This version reaches its end of life in June 2027. '
    "Security fixes stop on that date; plan your upgrade to the next major release before then.</p>"
    "</div></section>"
)


class InjectingServer(SiteServer):
    """The corpus with the notice section at the end of every HTML page's main content."""

    def resolve(self, path: str) -> Route:
        import lxml.html

        route = super().resolve(path)
        body = route.body if isinstance(route.body, bytes) else route.body.encode("utf-8")
        if route.status != 200 or b"<html" not in body[:2000].lower():
            return route
        tree = lxml.html.document_fromstring(body)
        main = tree.xpath("//*[@itemprop='articleBody']") or tree.xpath("//div[@role='main']")
        if not main:
            return route
        main[0].append(lxml.html.fragment_fromstring(NOTICE))
        return Route(lxml.html.tostring(tree, encoding="utf-8"), route.status, route.headers)


def normalised(text: str) -> str:
    return " ".join(text.split())


def repeated_in_top(hits: list[dict[str, Any]]) -> int:
    """Hits whose text equals an earlier hit's."""
    texts = [normalised(hit["text"]) for hit in hits]
    return len(texts) - len(set(texts))


def raw_search(client, embedder, query: str) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """The fused top 5 before identical texts are collapsed (search() with collapse bypassed)."""
    collapse = search_module.collapse
    search_module.collapse = lambda hits, k: hits[:k]
    try:
        return search_module.search(client, "harvester", embedder, query, 5, group_by=None)
    finally:
        search_module.collapse = collapse


def points_of(client) -> list[Any]:  # type: ignore[no-untyped-def]
    """Every point (``id``, ``payload``) of the crawl's store."""
    return list(client.scroll("harvester"))


def measure(corpus: str, settings: dict[str, str], queries_n: int, embedder, inject: bool) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    from harvester.index.engines import open_store

    server_class = InjectingServer if inject else SiteServer
    with tempfile.TemporaryDirectory() as tmp, server_class(root=Path(ROOTS[corpus])) as server:
        work = Path(tmp)
        result = crawl("docs", server.url, work, settings=settings, timeout=1800)
        assert result.returncode == 0, result.output[-2000:]
        subprocess.run([sys.executable, str(EVAL / "score.py"), corpus, str(work / "pages.jsonl"),
                        "--queries-out", str(work / "q.jsonl"), "--max-queries", str(queries_n)],
                       check=True, capture_output=True)
        queries = [json.loads(line) for line in (work / "q.jsonl").read_text().splitlines()]
        report = result.report or {}
        stats = _stats(result.output)
        client = open_store(None, None, str(work / "qdrant"))
        try:
            points = points_of(client)
            texts = Counter(normalised(p.payload["page_content"]) for p in points)
            top_repeats = sum(repeated_in_top(search_module.search(client, "harvester", embedder, q["query"], 5, group_by=None))
                              for q in queries)
            raw_repeats = [repeated_in_top(raw_search(client, embedder, q["query"])) for q in queries]
            notice_query = "When does this version reach its end of life?"
            notice = {
                "notice_points": sum(1 for p in points if "end of life in June 2027" in p.payload["page_content"]),
                "notice_query_raw_top5_repeats": repeated_in_top(raw_search(client, embedder, notice_query)),
                "notice_query_top5_repeats": repeated_in_top(
                    search_module.search(client, "harvester", embedder, notice_query, 5, group_by=None)),
            } if inject else {}
        finally:
            client.close()
    chunks_made = stats.get("harvester/chunking/chunks", 0)
    return {
        "pages_stored": report.get("pages_stored"),
        "aliases": report.get("aliases"),
        "duplicate_pages_dropped": report.get("skipped_by_reason", {}).get("duplicate_page", 0),
        "near_duplicates": report.get("near_duplicates"),
        "boilerplate_chunks": report.get("boilerplate_chunks"),
        "boilerplate_texts": stats.get("harvester/boilerplate/texts", 0),
        "chunks_made": chunks_made,
        "boilerplate_share": round(report.get("boilerplate_chunks", 0) / chunks_made, 4) if chunks_made else 0,
        "embeddings_saved": report.get("embeddings_saved"),
        "chunks_encoded": stats.get("harvester/embedding/chunks", 0),
        "points": len(points),
        "points_with_repeated_text": sum(n for n in texts.values() if n > 1),
        "queries": len(queries),
        "top5_repeated_texts": top_repeats,
        "raw_top5_queries_with_repeats": sum(1 for n in raw_repeats if n),
        **notice,
        "elapsed_s": report.get("elapsed_seconds"),
    }


def _stats(output: str) -> dict[str, Any]:
    """The counters of Scrapy's final stats dump in the crawl's log."""
    found: dict[str, Any] = {}
    for line in output.splitlines():
        line = line.strip().rstrip(",")
        if line.startswith(("'harvester/", "{'harvester/")):
            key, _, value = line.lstrip("{").partition(": ")
            try:
                found[key.strip("'")] = int(value)
            except ValueError:
                continue
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpora", default="flask,requests,scrapy")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--baseline", action="store_true", help="also crawl with near-dup/boilerplate off")
    parser.add_argument("--inject", action="store_true", help="serve a support notice on every page")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    embedder = CachedQueries(load_embedder(DEFAULT_MODEL))
    runs = [("dedup on (defaults)", {})] + ([("near-dup + boilerplate off", DEDUP_OFF)] if args.baseline else [])
    table: dict[str, dict[str, Any]] = {}
    for corpus in args.corpora.split(","):
        for label, settings in runs:
            figures = measure(corpus, settings, args.queries, embedder, args.inject)
            label = f"{label}{', notice injected' if args.inject else ''}"
            table[f"{corpus} / {label}"] = figures
            print(corpus, label, json.dumps(figures), flush=True)
            assert figures["top5_repeated_texts"] == 0, "search returned two identical chunk texts"
            assert figures.get("notice_query_top5_repeats", 0) == 0, "search repeated the notice"
    keys = list(next(iter(table.values())))
    print("\n| run | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for label, figures in table.items():
        print(f"| {label} | " + " | ".join(str(figures[k]) for k in keys) + " |")
    if args.json_out:
        args.json_out.write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
