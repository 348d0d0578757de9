"""Response bodies: decompression bombs counted and reported, mislabelled encodings corrected."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import TextResponse

from harvester.fetch.encoding import MIXED, clean_body, corrected_encoding
from harvester.report.failures import failure_reason
from harvester.signals import page_failed

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector
    from typing_extensions import Self

logger = logging.getLogger(__name__)


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


class EncodingFixMiddleware:
    """Decodes a text response as UTF-8 when it was labelled with a single-byte charset but is
    valid UTF-8, and as Windows-1252 when it was labelled UTF-8 but is not (as UTF-8 with its
    stray bytes read as Windows-1252 when most of it is UTF-8), and drops control characters
    (NUL...) from text bodies (rules in ``harvester/fetch/encoding.py``), so no mojibake reaches the
    index and no stray byte costs a page.

    Stats: ``harvester/pages/encoding_corrected``, ``harvester/pages/text_cleaned``.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        if not isinstance(response, TextResponse):
            return response
        declared = response.encoding
        encoding = corrected_encoding(response.body, declared)
        body = clean_body(response.body, encoding or declared)
        if encoding is None and body is None:
            return response
        if encoding is not None:
            self.crawler.stats.inc_value("harvester/pages/encoding_corrected")
            logger.debug("%s is labelled %s but is %s", response.url, declared, encoding)
        if body is None:
            return response.replace(encoding=encoding)
        self.crawler.stats.inc_value("harvester/pages/text_cleaned")
        return response.replace(body=body, encoding="utf-8" if encoding == MIXED else encoding or declared)
