"""``scrapy export``: copy a collection into a Qdrant server, qdrant-client's local mode or the
embedded engine (the one step from the embedded store to LangChain, LlamaIndex or a server)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from harvester.commands import effective_settings, settings_valid
from harvester.commands.startup import tune_process
from harvester.exceptions import CollectionMismatch, StoreUnavailable

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "(--to-url URL | --to-path DIR | --to-edge DIR) [options]"

    def short_desc(self) -> str:
        return "Copy the collection into a Qdrant server, a local-mode folder or the embedded engine"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--collection", help="collection (default HARVESTER_QDRANT_COLLECTION)")
        parser.add_argument("--as", dest="target_name", help="name in the target (default: the same)")
        targets = parser.add_mutually_exclusive_group()
        targets.add_argument("--to-url", help="a Qdrant server")
        targets.add_argument("--to-path", help="a qdrant-client local-mode folder (LangChain, LlamaIndex)")
        targets.add_argument("--to-edge", help="an embedded-engine store folder (HARVESTER_QDRANT_PATH)")
        parser.add_argument("--to-api-key", help="the target server's API key")
        parser.add_argument("--from-engine", choices=("edge", "local"),
                            help="read the embedded store with this engine (default HARVESTER_QDRANT_ENGINE)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        import os

        tune_process()  # before the imports below load NumPy
        # Imported here: Scrapy imports every command module for every command, crawls included.
        from harvester.index.engines import open_store
        from harvester.index.export import mirror_collection

        if args:
            raise UsageError("scrapy export takes no arguments")
        if not (opts.to_url or opts.to_path or opts.to_edge):
            raise UsageError("give a target: --to-url, --to-path or --to-edge")
        assert self.settings is not None
        settings = effective_settings(self.settings)
        if not settings_valid(self, settings):
            return None
        collection = opts.collection or settings.get("HARVESTER_QDRANT_COLLECTION")
        engine = opts.from_engine or settings.get("HARVESTER_QDRANT_ENGINE")
        path = settings.get("HARVESTER_QDRANT_PATH")
        url = None if opts.from_engine else settings.get("QDRANT_URL")
        try:
            source = open_store(url, settings.get("QDRANT_API_KEY"), path, engine,
                                settings.getfloat("HARVESTER_QDRANT_WAIT"))
        except (StoreUnavailable, RuntimeError) as exc:
            return self._fail(f"cannot open the source store: {exc}")
        try:
            if not source.exists(collection):
                return self._fail(f"no collection {collection!r} at {source.where}")
            if opts.to_edge and engine == "edge" and not url and os.path.abspath(opts.to_edge) == os.path.abspath(path):
                return self._fail("the target is the source store")
            target = open_store(opts.to_url, opts.to_api_key,
                                opts.to_path or opts.to_edge, "local" if opts.to_path else "edge",
                                settings.getfloat("HARVESTER_QDRANT_WAIT"))
            try:
                counts = mirror_collection(source, collection, target, opts.target_name)
            finally:
                target.close()
        except (StoreUnavailable, CollectionMismatch) as exc:
            return self._fail(str(exc))
        finally:
            source.close()
        where = opts.to_url or opts.to_path or opts.to_edge
        stale = f", deleted {counts.deleted} it no longer holds" if counts.deleted else ""
        print(f"exported {counts.copied} points of {collection!r} to {where} as "
              f"{opts.target_name or collection!r}{stale}")
        return None

    def _fail(self, message: str) -> None:
        print(f"harvester: error: {message}", file=sys.stderr)
        self.exitcode = 1
