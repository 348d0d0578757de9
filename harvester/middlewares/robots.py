"""robots.txt handling: Scrapy's RobotsTxtMiddleware, with a one-line warning instead of a traceback.

Scrapy logs every robots.txt download failure as an ERROR with a full traceback; for a host that is
down or refuses connections that buries the one line a user needs.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

from harvester.failures import failure_reason

if TYPE_CHECKING:
    from scrapy.robotstxt import RobotParser

logger = logging.getLogger(__name__)


class QuietRobotsTxtMiddleware(RobotsTxtMiddleware):
    """Replaces ``scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware``; same settings
    (``ROBOTSTXT_*``), same stats, same signal (``robots_parsed``), same rules."""

    async def robot_parser(self, request: Request) -> RobotParser | None:
        url = urlparse_cached(request)
        if url.netloc not in self._parsers:
            self._parsers[url.netloc] = Deferred()
            robots_url = f"{url.scheme}://{url.netloc}/robots.txt"
            robots_request = Request(
                robots_url, priority=self.DOWNLOAD_PRIORITY,
                meta={"dont_obey_robotstxt": True}, callback=NO_CALLBACK,
            )
            try:
                response = await self.crawler.engine.download_async(robots_request)
            except Exception as exc:
                if not isinstance(exc, IgnoreRequest):
                    logger.warning("Cannot fetch %s (%s): crawling as if it allowed everything",
                                   robots_url, failure_reason(exc))
                self._robots_error(exc, url.netloc)
            else:
                await self._parse_robots(response, url.netloc, request)
            self._stats.inc_value("robotstxt/request_count")
        # The parser (or the download in flight) is known now; the base class waits for it.
        return await super().robot_parser(request)
