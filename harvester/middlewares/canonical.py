"""Teach the spider the URL forms a site serves, from the responses it gets."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self


class ServedUrlMiddleware:
    """Spider middleware: before a callback's output is read, tell a Harvester spider about a
    redirected response (``HarvesterSpider.learn_served``), so links found on that page are already
    requested in the form the site serves and its final URL is not fetched again. The spiders'
    callbacks are generators, so their requests are built after this runs."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        learn = getattr(self.crawler.spider, "learn_served", None)
        if learn is not None:
            learn(response)
        async for element in result:
            yield element
