"""Mislabelled encodings corrected and control characters dropped from text responses, by the
rules in ``harvester.fetch.encoding``."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.http import TextResponse

from harvester.fetch.encoding import MIXED, clean_body, corrected_encoding

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


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
