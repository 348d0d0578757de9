"""``scrapy mcp``: serve the collection to assistants over the Model Context Protocol; and
``harvester-mcp``, the same command from any working directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from harvester.commands import settings_valid
from harvester.commands.search import index_settings, open_settings_store
from harvester.commands.startup import tune_process
from harvester.embedding.folder import ModelUnavailable
from harvester.exceptions import StoreUnavailable

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    # stdout carries the protocol: Scrapy's log goes to stderr, and only when asked for.
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[options]"

    def short_desc(self) -> str:
        return "Serve the collection over MCP (search, fetch, list_pages, list_sources)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--collection", help="default collection (default HARVESTER_QDRANT_COLLECTION)")
        parser.add_argument("--store", metavar="PATH",
                            help="the embedded store's folder (default HARVESTER_QDRANT_PATH)")
        parser.add_argument("--http", action="store_true",
                            help="streamable HTTP on --host/--port instead of stdio")
        parser.add_argument("--host", default="127.0.0.1", help="loopback address for --http (127.0.0.1)")
        parser.add_argument("--port", type=int, default=8765, help="port for --http (8765)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        tune_process()  # before the imports below load NumPy
        # Imported here, as every command's heavy modules: Scrapy imports all command modules
        # for every command, crawls included.
        try:
            from harvester.mcp_server.server import loopback, serve
        except ModuleNotFoundError as exc:
            if not (exc.name or "").startswith("mcp"):
                raise
            print("harvester: error: the MCP server needs the mcp extra: pip install 'harvester[mcp]' "
                  "(in a checkout: .venv/bin/pip install -e '.[mcp]')", file=sys.stderr)
            self.exitcode = 1
            return
        from harvester.embedding.query import load_query_embedder
        from harvester.mcp_server.core import SearchService

        if args:
            raise UsageError("scrapy mcp takes no arguments")
        if opts.http and not loopback(opts.host):
            raise UsageError(f"--host must be a loopback address (127.0.0.1, ::1), not {opts.host!r}")
        assert self.settings is not None
        if opts.store:
            self.settings.set("HARVESTER_QDRANT_PATH", opts.store, "cmdline")
        settings = index_settings(self.settings)
        if not settings_valid(self, settings):
            return
        path = Path(settings.get("HARVESTER_QDRANT_PATH")).expanduser().resolve()
        if not settings.get("QDRANT_URL") and not path.is_dir():
            # Opened, a missing folder would become an empty store that answers every call with nothing.
            print(f"harvester: error: no store at {path} (HARVESTER_QDRANT_PATH, or --store PATH): crawl "
                  "into it first, or name the folder the crawl wrote", file=sys.stderr)
            self.exitcode = 1
            return
        settings.set("HARVESTER_QDRANT_PATH", str(path), "cmdline")
        try:
            embedder = load_query_embedder(settings)
            store = open_settings_store(settings)
        except (ModelUnavailable, StoreUnavailable) as exc:
            print(f"harvester: error: {exc}", file=sys.stderr)
            self.exitcode = 1
            return
        service = SearchService(store, embedder, opts.collection or settings.get("HARVESTER_QDRANT_COLLECTION"))
        try:
            serve(service, "http" if opts.http else "stdio", opts.host, opts.port)
        finally:
            service.close()


def main(argv: list[str] | None = None) -> None:
    """``harvester-mcp [options]``: ``scrapy mcp`` with Harvester's settings module (or
    ``SCRAPY_SETTINGS_MODULE``), whatever the working directory, so that a client can start it
    without one."""
    from scrapy.cmdline import execute
    from scrapy.settings import Settings

    # Set for Scrapy's own project check too: a scrapy.cfg around the working directory is not read.
    module = os.environ.setdefault("SCRAPY_SETTINGS_MODULE", "harvester.settings")
    settings = Settings()
    settings.setmodule(module, priority="project")
    execute(["harvester-mcp", "mcp", *(sys.argv[1:] if argv is None else argv)], settings)
