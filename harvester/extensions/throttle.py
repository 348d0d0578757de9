"""AutoThrottle that honours robots.txt ``Crawl-delay``.

Scrapy parses ``Crawl-delay`` (``RobotParser.crawl_delay()``) but never acts on it, and
AutoThrottle would lower any delay we set on a slot back towards ``DOWNLOAD_DELAY``. So this
subclass keeps a per-host floor that its own delay adjustment never goes under.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.extensions.throttle import AutoThrottle
from scrapy.utils.httpobj import urlparse_cached

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.core.downloader import Slot
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.robotstxt import RobotParser

logger = logging.getLogger(__name__)


class CrawlDelayThrottle(AutoThrottle):
    """Replaces ``scrapy.extensions.throttle.AutoThrottle``.

    Settings: the ``AUTOTHROTTLE_*`` ones, ``HARVESTER_CRAWL_DELAY_ENABLED``,
    ``HARVESTER_CRAWL_DELAY_MAX`` (seconds; a larger Crawl-delay is capped and logged).
    Stats: ``harvester/robots/crawl_delay`` (the largest delay applied).
    Works with AutoThrottle off too: then only the Crawl-delay floor is applied.
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self._honour_crawl_delay = settings.getbool("HARVESTER_CRAWL_DELAY_ENABLED")
        self._autothrottle = settings.getbool("AUTOTHROTTLE_ENABLED")
        if not (self._autothrottle or self._honour_crawl_delay):
            raise NotConfigured
        if self._autothrottle:
            super().__init__(crawler)
        self.crawler = crawler
        self._max_crawl_delay = settings.getfloat("HARVESTER_CRAWL_DELAY_MAX")
        self._user_agent = settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT")
        self._floors: dict[str, float] = {}
        if self._honour_crawl_delay:
            crawler.signals.connect(self._robots_parsed, signal=signals.robots_parsed)
            crawler.signals.connect(
                self._request_reached_downloader, signal=signals.request_reached_downloader
            )

    def _robots_parsed(self, robotparser: RobotParser, request: Request, **kwargs: Any) -> None:
        delay = robotparser.crawl_delay(self._user_agent)
        if not delay:
            return
        host = urlparse_cached(request).hostname or ""
        if delay > self._max_crawl_delay:
            logger.warning(
                "robots.txt of %s asks for Crawl-delay %ss; using the cap of %ss",
                host, delay, self._max_crawl_delay,
            )
            delay = self._max_crawl_delay
        self._floors[host] = delay
        self.crawler.stats.max_value("harvester/robots/crawl_delay", delay)
        logger.info("Honouring robots.txt Crawl-delay of %ss for %s", delay, host)

    def _request_reached_downloader(self, request: Request, **kwargs: Any) -> None:
        # Sent after the slot exists and before it schedules the request: the floor applies at once.
        host = urlparse_cached(request).hostname or ""
        if host in self._floors:
            slot = self.crawler.engine.downloader.slots.get(request.meta.get("download_slot", host))
            if slot is not None:
                self._apply_floor(slot, self._floors[host])

    def _adjust_delay(self, slot: Slot, latency: float, response: Response) -> None:
        if response.status == 304:
            # AutoThrottle lowers the delay only after a 200 (error pages are small and fast); a
            # 304 answers a successful conditional request, and a re-crawl of an unchanged site
            # gets nothing else, so it would keep AUTOTHROTTLE_START_DELAY between all requests.
            response = response.replace(status=200)
        super()._adjust_delay(slot, latency, response)
        host = urlparse_cached(response).hostname or ""
        if host in self._floors:
            self._apply_floor(slot, self._floors[host])

    @staticmethod
    def _apply_floor(slot: Slot, floor: float) -> None:
        slot.delay = max(slot.delay, floor)
        # Random jitter would halve the delay half of the time.
        slot.jitter = 0.0
