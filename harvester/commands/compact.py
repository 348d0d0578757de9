"""``scrapy compact``: rebuild a collection of the embedded store with its live points only, giving
back the space that re-crawls' overwritten and deleted points hold (a crawl does it on its own past
``HARVESTER_QDRANT_COMPACT_SHARE``)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from harvester.commands import effective_settings, settings_valid
from harvester.exceptions import StoreUnavailable

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[options]"

    def short_desc(self) -> str:
        return "Rebuild the embedded store's collection to give back the space of rewritten points"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--collection", help="collection (default HARVESTER_QDRANT_COLLECTION)")
        parser.add_argument("--if-over", type=float, metavar="SHARE",
                            help="only when at least this share of the stored writes is dead (0 to 1)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        # Imported here: Scrapy imports every command module for every command, crawls included.
        from harvester.index.engines.compaction import CompactionError
        from harvester.index.engines.edge import EdgeStore

        if args:
            raise UsageError("scrapy compact takes no arguments")
        if opts.if_over is not None and not 0 <= opts.if_over <= 1:
            raise UsageError("--if-over takes a share from 0 to 1")
        assert self.settings is not None
        settings = effective_settings(self.settings)
        if not settings_valid(self, settings):
            return None
        if settings.get("QDRANT_URL") or settings.get("HARVESTER_QDRANT_ENGINE") != "edge":
            return self._fail("only the embedded engine (HARVESTER_QDRANT_ENGINE=edge, no QDRANT_URL) is "
                              "compacted here; a Qdrant server vacuums its own segments")
        path = settings.get("HARVESTER_QDRANT_PATH")
        if not path:
            return self._fail("HARVESTER_QDRANT_PATH is unset: there is no embedded store to compact")
        collection = opts.collection or settings.get("HARVESTER_QDRANT_COLLECTION")
        store = EdgeStore(path, wait=settings.getfloat("HARVESTER_QDRANT_WAIT"))
        try:
            if not store.exists(collection):
                return self._fail(f"no collection {collection!r} at {store.where}")
            done = store.compact(collection, opts.if_over)
        except (StoreUnavailable, CompactionError, ValueError, OSError) as exc:
            return self._fail(f"cannot compact {collection!r}: {exc}")
        finally:
            store.close()
        if done is None:
            print(f"{collection!r} needs no compaction (less than {opts.if_over:.0%} of its writes are dead)")
            return None
        print(f"compacted {collection!r}: {done.points} points, {done.bytes_before / 1e6:.1f} MB -> "
              f"{done.bytes_after / 1e6:.1f} MB ({done.dead_share:.0%} of the writes were dead) "
              f"in {done.seconds:.2f} s")
        return None

    def _fail(self, message: str) -> None:
        print(f"harvester: error: {message}", file=sys.stderr)
        self.exitcode = 1
