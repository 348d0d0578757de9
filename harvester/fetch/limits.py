"""Response bodies within ``DOWNLOAD_MAXSIZE``: decompression bombs counted and reported."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import IgnoreRequest

from harvester.report.failures import failure_reason
from harvester.signals import page_failed

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector


class BoundedHttpCompressionMiddleware(HttpCompressionMiddleware):
    """Scrapy's HttpCompressionMiddleware (gzip, deflate, br, zstd), which already stops
    decompressing at ``DOWNLOAD_MAXSIZE``. Its refusal is raised from ``process_response``, where no
    other middleware sees it, so this subclass records it: stat
    ``harvester/pages/failed/too_large``, signal ``page_failed`` (reason ``too_large``)."""

    def __init__(self, stats: StatsCollector | None = None, *, crawler: Crawler | None = None) -> None:
        super().__init__(stats, crawler=crawler)
        self.crawler = crawler

    def process_response(self, request: Request, response: Response) -> Response:
        try:
            return super().process_response(request, response)
        except IgnoreRequest as exc:
            reason = failure_reason(exc)
            if reason == "too_large" and self.crawler is not None:
                self.crawler.stats.inc_value(f"harvester/pages/failed/{reason}")
                self.crawler.signals.send_catch_log(page_failed, url=request.url, reason=reason)
            raise
