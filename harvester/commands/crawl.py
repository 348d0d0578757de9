"""``scrapy crawl``, as Scrapy has it, plus a clear error and a non-zero exit when a crawl fails.

Scrapy exits 0 whenever the crawler started, even when its start page was a 404 or its index was
unusable; a scheduler or CI running Harvester needs the failure in the exit status.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from harvester.commands import fail, settings_problem
from harvester.commands.startup import leave_to_exit, prepare_crawl, tune_process

if TYPE_CHECKING:
    import argparse

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
    # Imported here: Scrapy imports every command module for every command, `scrapy search` included.
    from harvester.spiders._base import HarvesterSpider

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
    from harvester.spiders._base import HarvesterSpider

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
        tune_process()
        spidercls = self.crawler_process.spider_loader.load(args[0])
        refusal = crawl_refusal(self.settings, spidercls, opts.spargs)
        if refusal is not None:
            fail(self, refusal, exitcode=2)
            return
        crawler = self._create_crawler(spidercls)
        prepare_crawl(crawler)
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        self.exitcode, error = crawl_outcome(crawler, self.crawler_process.bootstrap_failed)
        if error is not None:
            fail(self, error, exitcode=self.exitcode)
        leave_to_exit()
