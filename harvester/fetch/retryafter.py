"""Honour ``Retry-After`` on 429 and 503 answers before RetryMiddleware retries them."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import sleep

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


class RetryAfterMiddleware:
    """Placed just above RetryMiddleware (550): a 429 or 503 answer with ``Retry-After`` is held
    for that long (at most ``HARVESTER_RETRY_AFTER_MAX`` seconds) before RetryMiddleware retries
    it. Scrapy's RetryMiddleware retries at once. A wait over the cap, or with no retries left, is
    not waited for: the page then fails with its status.

    Stats: ``harvester/retry_after/waited``, ``harvester/retry_after/seconds``.
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("RETRY_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self._max_wait = settings.getfloat("HARVESTER_RETRY_AFTER_MAX")
        self._retry_times = settings.getint("RETRY_TIMES")
        self._codes = {429, 503}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_response(self, request: Request, response: Response) -> Response:
        if response.status not in self._codes or request.meta.get("dont_retry"):
            return response
        wait = retry_after_seconds(response.headers.get(b"Retry-After", b"").decode("latin-1"))
        retries_left = request.meta.get("max_retry_times", self._retry_times) - request.meta.get("retry_times", 0)
        if wait is None or wait > self._max_wait or retries_left <= 0:
            return response
        self.crawler.stats.inc_value("harvester/retry_after/waited")
        self.crawler.stats.inc_value("harvester/retry_after/seconds", round(wait, 3))
        logger.debug("%s answered %s with Retry-After %.1f s: waiting", request.url, response.status, wait)
        await sleep(wait)
        return response
