"""Politeness across the whole cluster: one request to a host per interval, whichever worker sends it.

Each Scrapy process spaces its own requests (``DOWNLOAD_DELAY``, AutoThrottle, the Crawl-delay
floor of ``CrawlDelayThrottle``), but N workers would hit a host N times as often. Before a request
leaves, this middleware reserves the host's next free send time in Redis (a Lua script on Redis's
own clock, so workers' clocks do not matter) and sleeps until it without blocking the reactor.
Reservations queue up in order, so no worker starves and no retry loop spins on Redis.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import sleep
from scrapy.utils.httpobj import urlparse_cached
from scrapy_redis.connection import get_redis_from_settings

from harvester.sites import SiteProfiles

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.robotstxt import RobotParser

logger = logging.getLogger(__name__)

# KEYS[1]: the host's next free time (ms, Redis clock); ARGV[1]: the interval (ms).
# Returns how many ms the caller waits before sending.
RESERVE_SCRIPT = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local free = tonumber(redis.call('GET', KEYS[1]) or '0')
local at = math.max(now_ms, free)
local interval = tonumber(ARGV[1])
redis.call('SET', KEYS[1], at + interval, 'PX', at + interval - now_ms + 60000)
return at - now_ms
"""


class ClusterPolitenessMiddleware:
    """Spaces the cluster's requests to each host by the largest of ``HARVESTER_CLUSTER_DELAY``,
    ``DOWNLOAD_DELAY`` and the host's robots.txt ``Crawl-delay`` (capped at
    ``HARVESTER_CRAWL_DELAY_MAX``, when ``HARVESTER_CRAWL_DELAY_ENABLED``) and the site profile's
    ``download_delay`` (``harvester.sites``).

    Keys ``harvester:politeness:<host>`` are shared by every crawl on the Redis server: two
    crawls of one site share its budget too. Stats: ``harvester/cluster/politeness_wait``
    (seconds slept, summed), ``harvester/cluster/politeness_waits``.
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("HARVESTER_CLUSTER"):
            raise NotConfigured
        self.crawler = crawler
        self._server = get_redis_from_settings(settings)
        self._reserve = self._server.register_script(RESERVE_SCRIPT)
        self._base = max(settings.getfloat("HARVESTER_CLUSTER_DELAY"), settings.getfloat("DOWNLOAD_DELAY"))
        self._honour_crawl_delay = settings.getbool("HARVESTER_CRAWL_DELAY_ENABLED")
        self._max_crawl_delay = settings.getfloat("HARVESTER_CRAWL_DELAY_MAX")
        self._user_agent = settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT")
        self._crawl_delays: dict[str, float] = {}
        if self._honour_crawl_delay:
            crawler.signals.connect(self._robots_parsed, signal=signals.robots_parsed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def interval(self, host: str) -> float:
        return max(self._base, self._crawl_delays.get(host, 0.0))

    async def process_request(self, request: Request) -> None:
        host = urlparse_cached(request).hostname or ""
        # A site profile's download_delay spaces the whole cluster's requests too.
        site_delay = SiteProfiles.from_crawler(self.crawler).for_url(request.url).download_delay or 0.0
        interval = max(self.interval(host), site_delay)
        if interval <= 0:
            return
        wait_ms = int(self._reserve(keys=[f"harvester:politeness:{host}"], args=[int(interval * 1000)]))
        if wait_ms > 0:
            stats = self.crawler.stats
            stats.inc_value("harvester/cluster/politeness_waits")
            stats.inc_value("harvester/cluster/politeness_wait", wait_ms / 1000)
            await sleep(wait_ms / 1000)

    def _robots_parsed(self, robotparser: RobotParser, request: Request, **kwargs: Any) -> None:
        delay = robotparser.crawl_delay(self._user_agent)
        if delay:
            host = urlparse_cached(request).hostname or ""
            self._crawl_delays[host] = min(float(delay), self._max_crawl_delay)
