"""``scrapy search "query"``: the best pages (or chunks) of the collection for a query."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from harvester.commands import settings_valid
from harvester.commands.startup import tune_process
from harvester.embedding.folder import ModelUnavailable
from harvester.exceptions import CollectionMismatch, StoreUnavailable

if TYPE_CHECKING:
    import argparse

    from scrapy.settings import Settings

    from harvester.index.store import Scope, Store


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return '[options] [--] "query"'

    def long_desc(self) -> str:
        return ('Search the Harvester collection. A query that starts with "-" goes after --, '
                'as in: scrapy search -- "-s or custom_settings: which wins?"')

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
        parser.add_argument("--group-by", choices=("page", "chunk"), default="page",
                            help="page: one result per page, with its best chunk (default); "
                                 "chunk: the best chunks, several per page if they rank so")
        parser.add_argument("--since", metavar="DATE",
                            help="only pages dated on or after DATE (YYYY-MM-DD, or an ISO 8601 date and time): "
                                 "their published date, else their modified date; undated pages are left out")
        parser.add_argument("--until", metavar="DATE", help="only pages dated on or before DATE (as --since)")
        parser.add_argument("--version", dest="docs_version", metavar="VERSION",
                            help="only pages of this docs version (default: each site's newest stable version)")
        parser.add_argument("--sort", choices=("relevance", "date"), default="relevance",
                            help="relevance: best match first (default); date: the same results, newest first")

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        try:
            super().process_options(args, opts)
        except UsageError as exc:
            if args:
                raise
            # Nothing left for the query: it began with "-" and was read as an option ("-s ...").
            raise UsageError(f'{exc}. A query that starts with "-" goes after --: '
                             'scrapy search -- "-s or custom_settings: which wins?"', print_help=False) from None

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        query = query_text(args)
        if not query.strip():
            raise UsageError('give a query, e.g. scrapy search "how do I add a route"')
        if opts.k < 1:
            raise UsageError("-k must be at least 1")
        dates = date_scope(opts.since, opts.until)
        if opts.docs_version:
            from harvester.index.store import Scope

            dates = replace(dates or Scope(), version=opts.docs_version)
        tune_process()
        assert self.settings is not None
        settings = index_settings(self.settings)
        if not settings_valid(self, settings):
            return
        try:
            hits = self._search(settings, query, opts.k, opts.collection, opts.mode,
                                None if opts.group_by == "chunk" else "page", dates, opts.sort)
        except (ModelUnavailable, SearchError) as exc:
            print(f"harvester: error: {exc}", file=sys.stderr)
            self.exitcode = 1
            return
        if not opts.docs_version and not opts.json:
            chosen = sorted({hit["version"] for hit in hits if hit.get("version")})
            if chosen:
                print(f"Version: {', '.join(chosen)} (--version VERSION for another)")
        print(json.dumps(hits, ensure_ascii=False, indent=1) if opts.json else format_hits(hits))

    def _search(self, settings: Settings, query: str, k: int, collection: str | None, mode: str,
                group_by: str | None, scope: Scope | None = None, sort: str = "relevance") -> list[dict[str, Any]]:
        # Imported here: Scrapy imports every command module for every command, crawls included.
        from harvester.embedding.query import load_query_embedder
        from harvester.index.search import search

        collection = collection or settings.get("HARVESTER_QDRANT_COLLECTION")
        try:
            store = open_settings_store(settings, collection)
        except StoreUnavailable as exc:
            raise SearchError(str(exc)) from exc
        try:
            if not store.exists(collection):
                raise SearchError(f"no collection {collection!r} at {store.where}: crawl something first")
            if mode != "dense":
                from harvester.index.store import check_sparse_encoding

                try:
                    check_sparse_encoding(collection, store.sparse_vectors(collection))
                except CollectionMismatch as exc:
                    raise SearchError(f"{exc} (--dense still searches it)") from exc
            embedder = load_query_embedder(settings)
            return search(store, collection, embedder, query, k, mode, group_by=group_by, scope=scope, sort=sort)
        except StoreUnavailable as exc:
            raise SearchError(str(exc)) from exc
        finally:
            store.close()


def query_text(args: list[str]) -> str:
    """The query in the words left after the options. Scrapy parses a command's options with
    ``parse_known_args``, which leaves the ``--`` separator among them: it is no part of the query
    (embedded, it moved the query's vector and its ranking)."""
    words = list(args)
    if "--" in words:
        words.remove("--")
    return " ".join(words)


def date_scope(since: str | None, until: str | None) -> Scope | None:
    """The scope of ``--since``/``--until`` (None without either); UsageError for a bad date."""
    if not (since or until):
        return None
    from harvester.index.search import date_bound
    from harvester.index.store import Scope

    try:
        scope = Scope(since=date_bound(since) if since else None,
                      until=date_bound(until, end=True) if until else None)
    except ValueError as exc:
        raise UsageError(str(exc), print_help=False) from None
    if scope.since and scope.until and scope.since > scope.until:
        raise UsageError("--since is after --until", print_help=False)
    return scope


def index_settings(settings: Settings) -> Settings:
    """Project settings with the spec's defaults under them: what the store and the query encoder
    read. Lighter than ``effective_settings`` (no add-on, so no component is imported), which a
    cold search cannot afford."""
    from harvester.config.spec import defaults

    merged = settings.copy()
    for name, value in defaults().items():
        merged.set(name, value, "addon")
    return merged


def open_settings_store(settings: Settings, collection: str | None = None) -> Store:
    """The store the settings name; raises StoreUnavailable when it cannot be opened, or when
    ``collection`` is only in the old local-mode format under the embedded engine."""
    from harvester.index.engines import legacy_collections, legacy_message, open_store

    url, path = settings.get("QDRANT_URL"), settings.get("HARVESTER_QDRANT_PATH")
    engine = settings.get("HARVESTER_QDRANT_ENGINE")
    if not url and engine == "edge" and collection and collection in legacy_collections(path):
        raise StoreUnavailable(legacy_message(path, collection))
    try:
        return open_store(url, settings.get("QDRANT_API_KEY"), path, engine,
                          settings.getfloat("HARVESTER_QDRANT_WAIT"))
    except StoreUnavailable:
        raise
    except Exception as exc:  # a refused connection, a bad URL...
        raise StoreUnavailable(f"cannot open Qdrant at {url or path}: {exc}") from exc


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
        more = f" ({hit['matches']} matching chunks)" if hit.get("matches", 1) > 1 else ""
        byline = ", ".join(filter(None, (hit.get("author"), hit.get("published") or hit.get("modified"))))
        more += f" ({byline})" if byline else ""
        blocks.append(f"{rank}. [{hit['score']:.3f}] {hit['title']}{more}\n   {hit['url']}\n   {path}\n   {snippet}")
    return "\n\n".join(blocks)
