"""Record pages that could not be fetched, after retries and redirects are done with them."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest, NotConfigured

from harvester.meta import is_reported_request
from harvester.report.failures import failure_reason
from harvester.signals import page_failed, page_skipped

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class FailureRecorderMiddleware:
    """Downloader middleware placed before RetryMiddleware (low order number), so it sees only the
    final outcome of a request: an error status after retries, or a network error after retries.

    Requests for robots.txt and probed sitemap locations (``harvester_probe``) are not pages.
    Stats: ``harvester/pages/failed/<reason>``, ``harvester/pages/skipped/robots_forbidden``.
    Signals sent: ``page_failed``, ``page_skipped``.
    """

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HARVESTER_REPORT_ENABLED"):
            raise NotConfigured
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        if response.status >= 400 and is_reported_request(request):
            self._record(page_failed, request.url, f"http_{response.status}", "failed")
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        if not is_reported_request(request):
            return
        if isinstance(exception, IgnoreRequest):
            reason = failure_reason(exception)
            if reason == "robots_forbidden":
                self._record(page_skipped, request.url, reason, "skipped")
            return
        self._record(page_failed, request.url, failure_reason(exception), "failed")

    def _record(self, signal: object, url: str, reason: str, kind: str) -> None:
        self.crawler.stats.inc_value(f"harvester/pages/{kind}/{reason}")
        self.crawler.signals.send_catch_log(signal, url=url, reason=reason)
