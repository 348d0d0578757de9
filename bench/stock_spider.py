"""The reference crawler of ``bench/bench_crawl.py``: a stock Scrapy ``CrawlSpider`` with a
``LinkExtractor`` rule, and trafilatura's Markdown for each page, as its documentation shows.

Run outside the project (``scrapy runspider bench/stock_spider.py -a start=URL``), with Scrapy's
own defaults. The only additions are three CPU timers (``stock/cpu_ms/{parse,links,extraction}``
in the stats) around what it does anyway, so its time can be split the way Harvester's is, and
``-a deny=JSON list`` for its LinkExtractor (``bench_crawl.py`` passes Harvester's skip patterns,
so both crawl the same pages).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import trafilatura
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class StockSpider(CrawlSpider):
    name = "stock"
    rules = (Rule(LinkExtractor(), callback="parse_item", follow=True),)

    def __init__(self, start: str = "", deny: str = "", **kwargs: Any) -> None:
        if deny:
            self.rules = (Rule(LinkExtractor(deny=json.loads(deny)), callback="parse_item", follow=True),)
        super().__init__(**kwargs)
        self.start_urls = [start]
        self.allowed_domains = [urlsplit(start).hostname or ""]

    def parse_start_url(self, response: Response, **kwargs: Any) -> Iterable[dict[str, Any]]:
        return self.parse_item(response)

    def parse_item(self, response: Response) -> Iterable[dict[str, Any]]:
        started = time.thread_time()
        markdown = trafilatura.extract(response.text, url=response.url, output_format="markdown",
                                       include_tables=True, include_links=False)
        self._count("extraction", started)
        if markdown:
            yield {"url": response.url, "markdown": markdown}

    def _requests_to_follow(self, response: Response) -> Iterable[Any]:
        # Timed as CrawlSpider runs it (the link extractor and the requests it builds), listed
        # before any is yielded so the time of the engine's work on them is not counted here.
        if isinstance(response, HtmlResponse):
            started = time.thread_time()
            response.selector  # noqa: B018 (parsed here, by the link extractor otherwise)
            self._count("parse", started)
        started = time.thread_time()
        requests = list(super()._requests_to_follow(response))
        self._count("links", started)
        yield from requests

    def _count(self, stage: str, started: float) -> None:
        self.crawler.stats.inc_value(f"stock/cpu_ms/{stage}", (time.thread_time() - started) * 1000)
