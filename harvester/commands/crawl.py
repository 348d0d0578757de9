"""``scrapy crawl``, as Scrapy has it, plus a clear error and a non-zero exit when a crawl fails.

Scrapy exits 0 whenever the crawler started, even when its start page was a 404 or its index was
unusable; a scheduler or CI running Harvester needs the failure in the exit status.
"""

from __future__ import annotations

import gc
import inspect
import logging
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from harvester.commands import fail, settings_problem
from harvester.spiders._base import HarvesterSpider

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator
    from types import FrameType

    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import Settings

logger = logging.getLogger(__name__)

FATAL_REASONS = {
    "start_url_failed": "the start URL could not be fetched",
    "index_unavailable": "the Qdrant index cannot be used",
    "embedding_model_unavailable": "the embedding model cannot be loaded",
}


def crawl_failure(stats: dict[str, Any]) -> str | None:
    """Why a finished crawl counts as failed, or None when it did its job."""
    reason = stats.get("finish_reason")
    if reason in FATAL_REASONS:
        return FATAL_REASONS[reason]
    crawled = stats.get("harvester/pages/crawled", 0)
    # A re-crawl of an unchanged site extracts nothing: its pages answer 304 or are skipped by
    # their sitemap lastmod, and that is success; so is a resumed job with little left to do.
    unchanged = sum(stats.get(f"harvester/recrawl/{key}", 0)
                    for key in ("unchanged_304", "sitemap_lastmod_skipped", "resumed_reached"))
    if not crawled and not unchanged:
        return "no page could be crawled (see the errors above)"
    if crawled and stats.get("harvester/pages/failed/extraction_error", 0) >= crawled:
        return "extraction failed on every page (see the errors above)"
    return None


def _idle_cluster_worker(settings: Any, stats: dict[str, Any]) -> bool:
    """A cluster worker that found the shared frontier empty did nothing wrong."""
    return (
        settings.getbool("HARVESTER_CLUSTER")
        and stats.get("finish_reason") == "finished"
        and not stats.get("harvester/pages/crawled")
    )


def crawl_refusal(settings: Settings, spidercls: type[Spider], spargs: dict[str, Any]) -> str | None:
    """Why a crawl of ``spidercls`` must not start (exit status 2), checked before any crawler
    exists: a bad setting, or spider arguments the spider refuses. None when it may start."""
    if not issubclass(spidercls, HarvesterSpider):
        return None
    problem = settings_problem(settings)
    if problem is not None:
        return problem
    try:
        # Building the spider checks its arguments, without a crawler or the network.
        spidercls(**spargs)
    except (TypeError, ValueError) as exc:
        return f"invalid arguments for spider {spidercls.name!r}: {exc}"
    return None


def crawl_outcome(crawler: Crawler, bootstrap_failed: bool) -> tuple[int, str | None]:
    """The exit status of a finished crawl, and the error line to print (None: nothing to say;
    a crawler that failed to start has logged why)."""
    if bootstrap_failed:
        return 1, None
    if issubclass(crawler.spidercls, HarvesterSpider) and crawler.stats is not None:
        stats = crawler.stats.get_stats()
        failure = crawl_failure(stats)
        if failure and _idle_cluster_worker(crawler.settings, stats):
            logger.info("The other cluster workers took every page: nothing was left for this one")
            failure = None
        if failure:
            return 1, f"crawl failed: {failure}"
    return 0, None


class Command(ScrapyCrawlCommand):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            super().run(args, opts)  # Scrapy's own usage errors
            return
        assert self.crawler_process is not None
        assert self.settings is not None
        spidercls = self.crawler_process.spider_loader.load(args[0])
        refusal = crawl_refusal(self.settings, spidercls, opts.spargs)
        if refusal is not None:
            fail(self, refusal, exitcode=2)
            return
        _import_http_handler()
        crawler = self._create_crawler(spidercls)
        # What start-up built (modules, classes, Scrapy's components: most of the objects alive
        # in a crawl) lives as long as the process: frozen once the spider opens, it is no longer
        # walked by every full collection (0.16 -> 0.04 s of a 49-page crawl's CPU). The few
        # objects of garbage alive at that moment stay; the crawl's own garbage is collected.
        crawler.signals.connect(_freeze_start_up, signal=signals.spider_opened, weak=False)
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        self.exitcode, error = crawl_outcome(crawler, self.crawler_process.bootstrap_failed)
        if error is not None:
            fail(self, error, exitcode=self.exitcode)
        # The process ends after this: the interpreter's last collections would walk every object
        # the crawl left alive (0.2 s of CPU after a 70-page crawl, about a tenth of its pages'
        # work) only to free memory the exit frees anyway. Frozen, they are left to the exit.
        # Nothing that matters is skipped: the feed, the index, the browser and the workers are
        # closed when the spider closes, and atexit handlers still run.
        gc.freeze()


def _import_http_handler() -> None:
    """Import Scrapy's HTTP/1.1 download handler (which scrapy-playwright's handler imports too)
    before the engine starts, with ``inspect.stack()`` made cheap while it loads. Its modules define
    three of Scrapy's deprecated-class aliases, and each calls ``inspect.stack()`` only to name the
    module that defines it. The real one reads every frame's source and, for each frame without a
    file (the import machinery's), scans all of ``sys.modules`` (python/cpython#92041). The import
    cost a crawl 135-153 ms of CPU from here (177 from the engine's deeper stack), 47-67 with the
    frames listed without their source."""
    with _stack_without_source():
        import scrapy.core.downloader.handlers.http11  # noqa: F401


@contextmanager
def _stack_without_source() -> Iterator[None]:
    """``inspect.stack()`` listing the frames without reading their source files (what
    ``context=0`` cannot skip: it still looks up each frame's module), for a block of start-up code
    that runs in one thread."""
    original = inspect.stack

    def stack(context: int = 1) -> list[inspect.FrameInfo]:
        frames = []
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            code = frame.f_code
            frames.append(inspect.FrameInfo(frame, code.co_filename, frame.f_lineno, code.co_name, None, None,
                                            positions=None))
            frame = frame.f_back
        return frames

    inspect.stack = stack
    try:
        yield
    finally:
        inspect.stack = original


def _freeze_start_up(spider: Spider) -> None:
    gc.freeze()
