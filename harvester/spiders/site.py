"""``site``: follow every link inside the start URL's host and path prefix."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response
from scrapy.link import Link
from scrapy.linkextractors import IGNORED_EXTENSIONS, LinkExtractor
from scrapy.spiders import CrawlSpider, Rule

from harvester.spiders._base import HarvesterSpider


class SiteSpider(HarvesterSpider, CrawlSpider):
    """A CrawlSpider scoped to the start URL's host, port and path prefix.

    Links are scoped by our own rule rather than ``LinkExtractor(allow_domains=...)``, which never
    matches a host with a port. Argument: ``max_depth`` (default ``HARVESTER_SITE_MAX_DEPTH``).
    Stats: ``harvester/site/too_deep``.
    """

    name = "site"
    # PDFs are pages too (``wants()`` drops them when HARVESTER_PDF_ENABLED is off).
    rules = (Rule(LinkExtractor(deny_extensions=[e for e in IGNORED_EXTENSIONS if e != "pdf"]), follow=True,
                  process_request="follow_link", errback="page_failed"),)

    def __init__(self, *args: Any, max_depth: str | int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._max_depth_arg = max_depth
        if max_depth not in (None, "") and (not str(max_depth).isdigit()):
            raise ValueError(f"max_depth must be a non-negative integer, got {max_depth!r}")

    async def start(self) -> AsyncIterator[Any]:
        async for request in super().start():
            # CrawlSpider's own entry point applies the rules to the start page.
            yield request.replace(callback=self._parse)

    def follow_link(self, request: scrapy.Request, response: Response) -> scrapy.Request | None:
        if not self.wants(request.url):
            return None
        self.remember_link(response, request.url)
        depth = response.meta.get("depth", 0) + 1
        if depth > self._max_depth():
            self.crawler.stats.inc_value("harvester/site/too_deep")
            return None
        if not self.claim(request.url):
            return None
        url = self.request_url(request.url)
        return request if url == request.url else request.replace(url=url)

    def follow_stored_links(self, response: Response, urls: list[str]) -> Iterator[scrapy.Request]:
        """The stored links of a page that answered 304, through the same rule as parsed links."""
        rule = self._rules[0]
        for url in urls:
            request = rule.process_request(self._build_request(0, Link(url)), response)
            if request is not None:
                yield request

    def _max_depth(self) -> int:
        if self._max_depth_arg not in (None, ""):
            return int(self._max_depth_arg)
        return self.settings.getint("HARVESTER_SITE_MAX_DEPTH")
