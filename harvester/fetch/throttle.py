"""AutoThrottle that honours robots.txt ``Crawl-delay`` and the site profiles' ``download_delay``.

Scrapy parses ``Crawl-delay`` (``RobotParser.crawl_delay()``) but never acts on it, and
AutoThrottle would lower any delay we set on a slot back towards ``DOWNLOAD_DELAY``. So this
subclass keeps a per-host floor that its own delay adjustment never goes under. Scrapy's
``DOWNLOAD_SLOTS`` delays would not do for profiles: AutoThrottle lowers a slot's delay down to the
global ``DOWNLOAD_DELAY`` whatever the slot was given.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.extensions.throttle import AutoThrottle
from scrapy.utils.httpobj import urlparse_cached

from harvester.sites import SiteProfiles

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
    A site profile's ``download_delay`` (``harvester.sites``) is a floor too: the larger of it and
    the Crawl-delay holds. The floor belongs to the host's download slot, so a profile matched by
    URL pattern sets it for its host from the first request it matched on.
    Works with AutoThrottle off too: then only the floors are applied.
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self._honour_crawl_delay = settings.getbool("HARVESTER_CRAWL_DELAY_ENABLED")
        self._autothrottle = settings.getbool("AUTOTHROTTLE_ENABLED")
        self._profiles = SiteProfiles.from_crawler(crawler)
        if not (self._autothrottle or self._honour_crawl_delay or self._profiles.has_download_delay()):
            raise NotConfigured
        if self._autothrottle:
            super().__init__(crawler)
        self.crawler = crawler
        self._max_crawl_delay = settings.getfloat("HARVESTER_CRAWL_DELAY_MAX")
        self._user_agent = settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT")
        self._floors: dict[str, float] = {}
        if self._honour_crawl_delay:
            crawler.signals.connect(self._robots_parsed, signal=signals.robots_parsed)
        crawler.signals.connect(self._request_reached_downloader, signal=signals.request_reached_downloader)

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
        self._floors[host] = max(self._floors.get(host, 0.0), delay)
        self.crawler.stats.max_value("harvester/robots/crawl_delay", delay)
        logger.info("Honouring robots.txt Crawl-delay of %ss for %s", delay, host)

    def _request_reached_downloader(self, request: Request, **kwargs: Any) -> None:
        # Sent after the slot exists and before it schedules the request: the floor applies at once.
        host = urlparse_cached(request).hostname or ""
        site_delay = self._profiles.for_url(request.url).download_delay
        if site_delay and site_delay > self._floors.get(host, 0.0):
            self._floors[host] = site_delay
            logger.info("Site profile download_delay of %ss for %s", site_delay, host)
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
