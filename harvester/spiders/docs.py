"""``docs``: walk a documentation site by its own navigation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from scrapy.http import HtmlResponse, Response

from harvester.report.cpu import cpu_stage
from harvester.spiders._base import HarvesterSpider, page_selector
from harvester.spiders.navigation import (
    body_links,
    content_links,
    page_classes,
    pager_links,
    toc_links,
)

if TYPE_CHECKING:
    import scrapy


class DocsSpider(HarvesterSpider):
    """Follow prev/next links (``<link rel=next>``, pager controls of the common generators), then
    the sidebar / table of contents, then links in the page's content, all inside the start URL's
    path prefix, so a broken chain loses no page. A page where none of them is recognised (a
    hand-made manual with no ``main`` and no generator's markup) has every link of its body
    followed instead. Cycles end because every URL is claimed once.

    Stats: ``harvester/docs/{pager,toc,content,body}_links`` (requests scheduled),
    ``harvester/cpu_ms/{parse,links}``.
    """

    name = "docs"

    def parse(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        if not isinstance(response, HtmlResponse):
            return
        stats = self.crawler.stats
        with cpu_stage(stats, "parse"):
            page = page_selector(response)
        requests = []
        with cpu_stage(stats, "links"):
            classes = page_classes(page)
            # Pager links first: they carry the reading order, so they get the highest priority.
            found = [
                ("pager_links", pager_links(page, classes), 1),
                ("toc_links", toc_links(page, classes), 0),
                ("content_links", content_links(page, classes), -1),
            ]
            if not any(hrefs for _, hrefs, _ in found):
                found = [("body_links", body_links(page), -1)]
            for kind, hrefs, priority in found:
                for href in hrefs:
                    request = self.page_request(self.link_url(response, href), self.parse, source=response)
                    if request is not None:
                        request.priority = priority
                        stats.inc_value(f"harvester/docs/{kind}")
                        requests.append(request)
        yield from requests
