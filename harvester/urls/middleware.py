"""The URL rules' spider middlewares: crawl traps dropped before they are scheduled (rules in
``harvester/urls/traps.py``), and the URL forms a site serves learned from its responses."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import NotConfigured

from harvester.meta import is_page_request
from harvester.signals import page_skipped
from harvester.urls.traps import TrapDetector, TrapLimits

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class CrawlTrapMiddleware:
    """Spider middleware: every page request a spider yields (links, sitemap entries, next pages)
    is checked once; the start request and sitemap or robots.txt requests are not pages.

    Settings: ``HARVESTER_TRAP_DETECTION_ENABLED``, ``HARVESTER_TRAP_MAX_SEGMENT_REPEATS``,
    ``HARVESTER_TRAP_MAX_DATE_VARIANTS``, ``HARVESTER_TRAP_MAX_QUERY_VARIANTS``,
    ``HARVESTER_MAX_PAGES_PER_HOST``.
    Stats: ``harvester/traps/<kind>``. Signal sent: ``page_skipped`` (reason ``trap_<kind>``).
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("HARVESTER_TRAP_DETECTION_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.detector = TrapDetector(TrapLimits(
            max_segment_repeats=settings.getint("HARVESTER_TRAP_MAX_SEGMENT_REPEATS"),
            max_date_variants=settings.getint("HARVESTER_TRAP_MAX_DATE_VARIANTS"),
            max_query_variants=settings.getint("HARVESTER_TRAP_MAX_QUERY_VARIANTS"),
            max_pages_per_host=settings.getint("HARVESTER_MAX_PAGES_PER_HOST"),
        ))
        self._told: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for element in result:
            if isinstance(element, Request) and self._is_trap(element):
                continue
            yield element

    def _is_trap(self, request: Request) -> bool:
        if not is_page_request(request):
            return False
        kind = self.detector.check(request.url)
        if kind is None:
            return False
        self.crawler.stats.inc_value(f"harvester/traps/{kind}")
        if kind not in self._told:
            self._told.add(kind)
            logger.warning("Crawl trap (%s): not following %s and others like it", kind, request.url)
        self.crawler.signals.send_catch_log(page_skipped, url=request.url, reason=f"trap_{kind}")
        return True


class ServedUrlMiddleware:
    """Spider middleware: before a callback's output is read, tell a Harvester spider about a
    redirected response (``HarvesterSpider.learn_served``), so links found on that page are already
    requested in the form the site serves and its final URL is not fetched again. The spiders'
    callbacks are generators, so their requests are built after this runs."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        learn = getattr(self.crawler.spider, "learn_served", None)
        if learn is not None:
            learn(response)
        async for element in result:
            yield element
