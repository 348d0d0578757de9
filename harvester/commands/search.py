"""``scrapy search "query"``: the top chunks of the collection for a query."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from harvester.commands import effective_settings
from harvester.embedding.folder import ModelUnavailable

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return '[options] "query"'

    def short_desc(self) -> str:
        return "Search the Harvester collection"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("-k", type=int, default=5, help="number of results (default 5)")
        parser.add_argument("--json", action="store_true", help="print a JSON list")
        parser.add_argument("--collection", help="collection (default HARVESTER_QDRANT_COLLECTION)")
        modes = parser.add_mutually_exclusive_group()
        modes.add_argument("--dense", dest="mode", action="store_const", const="dense",
                           help="embedding similarity only")
        modes.add_argument("--sparse", dest="mode", action="store_const", const="sparse",
                           help="BM25 term matching only")
        parser.set_defaults(mode="hybrid")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args or not " ".join(args).strip():
            raise UsageError("give a query, e.g. scrapy search \"how do I add a route\"")
        if opts.k < 1:
            raise UsageError("-k must be at least 1")
        try:
            hits = self._search(" ".join(args), opts.k, opts.collection, opts.mode)
        except (ModelUnavailable, SearchError) as exc:
            print(f"harvester: error: {exc}", file=sys.stderr)
            self.exitcode = 1
            return
        print(json.dumps(hits, ensure_ascii=False, indent=1) if opts.json else format_hits(hits))

    def _search(self, query: str, k: int, collection: str | None, mode: str) -> list[dict[str, Any]]:
        # Imported here: Scrapy imports every command module for every command, crawls included.
        from harvester.embedding.models import backend_options, load_backend
        from harvester.index.search import search
        from harvester.index.store import open_client

        assert self.settings is not None
        settings = effective_settings(self.settings)
        collection = collection or settings.get("HARVESTER_QDRANT_COLLECTION")
        embedder = load_backend(settings.get("HARVESTER_EMBEDDING_MODEL"), **backend_options(settings))
        where = settings.get("QDRANT_URL") or settings.get("HARVESTER_QDRANT_PATH")
        try:
            client = open_client(
                settings.get("QDRANT_URL"), settings.get("QDRANT_API_KEY"),
                settings.get("HARVESTER_QDRANT_PATH"),
            )
        except Exception as exc:  # a locked local store, a refused connection...
            raise SearchError(f"cannot open Qdrant at {where}: {exc}") from exc
        try:
            if not client.collection_exists(collection):
                raise SearchError(f"no collection {collection!r} at {where}: crawl something first")
            return search(client, collection, embedder, query, k, mode)
        finally:
            client.close()


class SearchError(RuntimeError):
    """The search cannot run (no collection, Qdrant unreachable)."""


def format_hits(hits: list[dict[str, Any]]) -> str:
    """Results for a person: rank, score, title, URL, heading path and the start of the text."""
    if not hits:
        return "No results."
    blocks = []
    for rank, hit in enumerate(hits, 1):
        snippet = " ".join(hit["text"].split())[:240]
        path = " > ".join(hit["heading_path"])
        blocks.append(f"{rank}. [{hit['score']:.3f}] {hit['title']}\n   {hit['url']}\n   {path}\n   {snippet}")
    return "\n\n".join(blocks)
