"""``site``: follow every link inside the start URL's host and path prefix."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from scrapy.http import HtmlResponse, Response
from scrapy.link import Link
from scrapy.linkextractors import IGNORED_EXTENSIONS
from scrapy.spiders import CrawlSpider, Rule

from harvester.report.cpu import cpu_stage
from harvester.spiders._base import HarvesterSpider, page_selector
from harvester.spiders.links import PageLinkExtractor

if TYPE_CHECKING:
    import scrapy


class SiteSpider(HarvesterSpider, CrawlSpider):
    """A CrawlSpider scoped to the start URL's host, port and path prefix.

    Links are scoped by our own rule rather than ``LinkExtractor(allow_domains=...)``, which never
    matches a host with a port. Each distinct link is worked out once per crawl, and a link to a
    page already claimed is dropped before a request is built for it (``PageLinkExtractor.urls``,
    ``HarvesterSpider.new_page``). Argument: ``max_depth`` (default ``HARVESTER_SITE_MAX_DEPTH``).
    Stats: ``harvester/site/too_deep``, ``harvester/cpu_ms/{parse,links}``.
    """

    name = "site"
    # PDFs are pages too (``wants()`` drops them when HARVESTER_PDF_ENABLED is off).
    rules = (Rule(PageLinkExtractor(deny_extensions=[e for e in IGNORED_EXTENSIONS if e != "pdf"]), follow=True,
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

    def _requests_to_follow(self, response: Response) -> Iterable[scrapy.Request | None]:
        """CrawlSpider's link following, with the rule's process_request (``follow_link``) applied
        to URLs before any request is built: most links of a page lead to pages already claimed."""
        if not isinstance(response, HtmlResponse):
            return
        stats = self.crawler.stats
        with cpu_stage(stats, "parse"):
            page_selector(response)  # parsed here, timed apart; link and page extraction reuse the tree
        with cpu_stage(stats, "links"):
            # Only the start URL's host is in scope (``wants``): links to others are dropped unresolved.
            found = self._rules[0].link_extractor.urls(response, hosts=(self.url_rules.host_key(self.start_url),))
            urls = [self.follow_url(url, response) for url in found]
            requests = [self._build_request(0, Link(url)) for url in urls if url is not None]
        yield from requests

    def follow_link(self, request: scrapy.Request, response: Response) -> scrapy.Request | None:
        url = self.follow_url(request.url, response)
        if url is None:
            return None
        return request if url == request.url else request.replace(url=url)

    def follow_url(self, url: str, response: Response) -> str | None:
        """The URL to request for a link to ``url`` found on ``response``, which claims its page;
        None when it is not wanted, claimed already or too deep."""
        target = self.new_page(url, response)
        if target is None:
            return None
        if response.meta.get("depth", 0) + 1 > self._max_depth():
            self.crawler.stats.inc_value("harvester/site/too_deep")
            return None
        self._seen.add(target.key)
        return self.served_forms.preferred(target.canonical)

    def follow_stored_links(self, response: Response, urls: list[str]) -> Iterator[scrapy.Request]:
        """The stored links of a page that answered 304, through the same rule as parsed links."""
        for url in urls:
            followed = self.follow_url(url, response)
            if followed is not None:
                yield self._build_request(0, Link(followed))

    def _max_depth(self) -> int:
        if not hasattr(self, "_depth_limit"):
            arg = self._max_depth_arg
            self._depth_limit = int(arg) if arg not in (None, "") else self.settings.getint("HARVESTER_SITE_MAX_DEPTH")
        return self._depth_limit
