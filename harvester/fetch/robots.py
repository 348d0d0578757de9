"""robots.txt per RFC 9309, on Scrapy's RobotsTxtMiddleware (and its Protego parser).

Scrapy parses whatever robots.txt request returns, so a 5xx error page becomes "no rules", and it
allows everything on a network error; RFC 9309 asks the opposite (section 2.3.1):

- 2xx: the rules, of which the first ``HARVESTER_ROBOTSTXT_MAX_BYTES`` are parsed;
- 4xx ("unavailable"): no rules, crawl everything; 429 is an overload signal and counts as
  unreachable, as Google treats it;
- 5xx or a network error ("unreachable"): disallow everything on that host, until
  ``HARVESTER_ROBOTSTXT_UNREACHABLE_SECONDS`` later, when robots.txt is fetched again;
- at most 5 redirects are followed, to any host the SSRF guard allows; more is "unavailable";
- rules are cached for at most ``HARVESTER_ROBOTSTXT_CACHE_SECONDS`` (24 hours).

Failures are logged as one warning line instead of Scrapy's traceback.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler
from twisted.internet.defer import Deferred

from harvester.meta import ROBOTS_TXT
from harvester.report.failures import failure_reason

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.robotstxt import RobotParser

logger = logging.getLogger(__name__)

DISALLOW_ALL = b"User-agent: *\nDisallow: /\n"
MAX_REDIRECTS = 5  # RFC 9309 2.3.1.2


class QuietRobotsTxtMiddleware(RobotsTxtMiddleware):
    """Replaces ``scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware``; same settings
    (``ROBOTSTXT_*``), same stats, same signal (``robots_parsed``, for parsed files only).

    Settings: ``HARVESTER_ROBOTSTXT_MAX_BYTES``, ``HARVESTER_ROBOTSTXT_CACHE_SECONDS``,
    ``HARVESTER_ROBOTSTXT_UNREACHABLE_SECONDS``.
    Stats: ``harvester/robots/unavailable``, ``harvester/robots/unreachable``.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        self._max_bytes = settings.getint("HARVESTER_ROBOTSTXT_MAX_BYTES")
        self._cache_seconds = settings.getfloat("HARVESTER_ROBOTSTXT_CACHE_SECONDS")
        self._unreachable_seconds = settings.getfloat("HARVESTER_ROBOTSTXT_UNREACHABLE_SECONDS")
        self._expires: dict[str, float] = {}
        self._unreachable_reasons: dict[str, str] = {}

    def process_request_2(self, rp: RobotParser | None, request: Request) -> None:
        try:
            super().process_request_2(rp, request)
        except IgnoreRequest:
            reason = self._unreachable_reasons.get(urlparse_cached(request).netloc)
            if reason:
                raise IgnoreRequest(f"Forbidden by robots.txt: it is unreachable ({reason})") from None
            raise

    async def robot_parser(self, request: Request) -> RobotParser | None:
        url = urlparse_cached(request)
        if self._needs_fetch(url.netloc):
            self._parsers[url.netloc] = Deferred()
            await self._fetch(f"{url.scheme}://{url.netloc}/robots.txt", url.netloc, request)
        # The parser (or the download in flight) is known now; the base class waits for it.
        return await super().robot_parser(request)

    def _needs_fetch(self, netloc: str) -> bool:
        if netloc not in self._parsers:
            return True
        if isinstance(self._parsers[netloc], Deferred):
            return False
        return time.monotonic() >= self._expires.get(netloc, float("inf"))

    async def _fetch(self, robots_url: str, netloc: str, request: Request) -> None:
        robots_request = Request(
            robots_url, priority=self.DOWNLOAD_PRIORITY, callback=NO_CALLBACK,
            meta={
                ROBOTS_TXT: True,
                "allow_offsite": True,  # a redirect may lead to another host (RFC 9309 2.3.1.2)
                "redirect_ttl": MAX_REDIRECTS,
                # Parsing stops at the cap; the download may run a little past it, to a line end.
                "download_maxsize": self._max_bytes * 4,
            },
        )
        self._stats.inc_value("robotstxt/request_count")
        try:
            response = await self.crawler.engine.download_async(robots_request)
        except IgnoreRequest as exc:  # too many redirects, or refused by the SSRF guard
            self._unavailable(netloc, robots_url, failure_reason(exc))
            return
        except Exception as exc:
            self._stats.inc_value(f"robotstxt/exception_count/{type(exc)}")
            self._unreachable(netloc, robots_url, failure_reason(exc))
            return
        status = response.status
        if 200 <= status < 300:
            await self._parse_robots(self._capped(response), netloc, request)
            self._expires[netloc] = time.monotonic() + self._cache_seconds
            return
        self._stats.inc_value("robotstxt/response_count")
        self._stats.inc_value(f"robotstxt/response_status_count/{status}")
        if status >= 500 or status == 429:
            self._unreachable(netloc, robots_url, f"http_{status}")
        else:
            self._unavailable(netloc, robots_url, f"http_{status}")

    def _capped(self, response: Response) -> Response:
        body = response.body
        if len(body) <= self._max_bytes:
            return response
        cut = body.rfind(b"\n", 0, self._max_bytes)
        logger.info("robots.txt %s is over %d bytes: the rest is ignored", response.url, self._max_bytes)
        return response.replace(body=body[: cut + 1 if cut >= 0 else self._max_bytes])

    def _unavailable(self, netloc: str, robots_url: str, reason: str) -> None:
        self._stats.inc_value("harvester/robots/unavailable")
        logger.debug("No robots.txt at %s (%s): crawling as if it allowed everything", robots_url, reason)
        self._settle(netloc, None, self._cache_seconds)

    def _unreachable(self, netloc: str, robots_url: str, reason: str) -> None:
        self._stats.inc_value("harvester/robots/unreachable")
        logger.warning(
            "Cannot fetch %s (%s): crawling nothing on %s for %.0f s, as RFC 9309 asks",
            robots_url, reason, netloc, self._unreachable_seconds,
        )
        parser = build_from_crawler(self._parserimpl, self.crawler, DISALLOW_ALL)
        self._settle(netloc, parser, self._unreachable_seconds)
        self._unreachable_reasons[netloc] = reason

    def _settle(self, netloc: str, parser: RobotParser | None, seconds: float) -> None:
        self._unreachable_reasons.pop(netloc, None)
        pending = self._parsers.get(netloc)
        self._parsers[netloc] = parser
        self._expires[netloc] = time.monotonic() + seconds
        if isinstance(pending, Deferred) and not pending.called:
            pending.callback(parser)
