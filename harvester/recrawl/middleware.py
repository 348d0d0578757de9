"""Conditional requests for pages already in the index, and what a 304 or a 404/410 means for them.

Scrapy's HttpCacheMiddleware (RFC2616 policy) also revalidates with ETag / Last-Modified, but
against whole responses it keeps in a local cache; here the validators come from the index, which
must stay the single source of truth, and a 304 must skip extraction and indexing, not replay
the old body through them.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

from harvester.meta import CONDITIONAL, TEMPLATE_SAMPLE, UNCHANGED, is_page_request
from harvester.recrawl.extension import Recrawl

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

GONE_STATUSES = (404, 410)


class ConditionalRequestMiddleware:
    """Downloader middleware: ask for stored pages with ``If-None-Match`` / ``If-Modified-Since``.

    A 304 answer reaches the spider's callback flagged ``harvester_unchanged`` (extraction skips
    it: it is not a 2xx) and counts as reached; a 404 or 410 for a stored page marks it gone (the
    index pipeline deletes its points). Every page requested counts as reached, so a page that
    fails for a while is not pruned.
    Settings: ``HARVESTER_RECRAWL_ENABLED``, ``HARVESTER_CONDITIONAL_REQUESTS``.
    Stats: ``harvester/recrawl/conditional_requests``, ``harvester/recrawl/unchanged_304``,
    ``harvester/recrawl/gone``.
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("HARVESTER_RECRAWL_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self._conditional = settings.getbool("HARVESTER_CONDITIONAL_REQUESTS")
        self._recrawl: Recrawl | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _state(self) -> Recrawl | None:
        if self._recrawl is None:
            self._recrawl = self.crawler.get_extension(Recrawl)
        return self._recrawl

    def process_request(self, request: Request) -> None:
        recrawl = self._state()
        if recrawl is None or not is_page_request(request) or request.meta.get(TEMPLATE_SAMPLE):
            return
        recrawl.reach(request.url)
        page = recrawl.stored(request.url)
        # Not through the browser: it would show a 304's empty body.
        if page is None or not self._conditional or request.meta.get("playwright"):
            return
        validators = page.validators
        if not validators or any(name in request.headers for name in validators):
            return
        for name, value in validators.items():
            request.headers[name] = value
        # Let the 304 through HttpErrorMiddleware to the callback, which replays the stored links.
        allowed = list(request.meta.get("handle_httpstatus_list", ()))
        request.meta["handle_httpstatus_list"] = [*allowed, 304]
        request.meta[CONDITIONAL] = True
        self.crawler.stats.inc_value("harvester/recrawl/conditional_requests")

    def process_response(self, request: Request, response: Response) -> Response:
        recrawl = self._state()
        if recrawl is None or not is_page_request(request) or request.meta.get(TEMPLATE_SAMPLE):
            return response
        if response.status == 304 and request.meta.get(CONDITIONAL):
            request.meta[UNCHANGED] = True
            recrawl.count("unchanged_304")
            recrawl.mark_unchanged(request.url, response.status)
        elif 200 <= response.status < 300 and recrawl.stored(request.url) is not None:
            recrawl.fetched.add(recrawl.stored(request.url).url)
        elif response.status in GONE_STATUSES and recrawl.stored(request.url) is not None:
            recrawl.mark_gone(request.url, response.status)
            self.crawler.stats.inc_value("harvester/recrawl/gone")
            logger.info("Stored page gone (HTTP %d): %s", response.status, request.url)
        return response


class StoredLinksMiddleware:
    """Spider middleware: after the callback of a 304 (an empty body, so no links of its own),
    follow the links stored with the page, so an unchanged page still leads to the pages below it.
    Ordered above every link-checking spider middleware (the add-on), so the replayed links meet
    the same rules as the callback's own.
    """

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HARVESTER_RECRAWL_ENABLED"):
            raise NotConfigured
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for element in result:
            yield element
        if not response.meta.get(UNCHANGED):
            return
        recrawl = self.crawler.get_extension(Recrawl)
        page = recrawl.stored(response.url) if recrawl is not None else None
        follow = getattr(self.crawler.spider, "follow_stored_links", None)
        if page is None or follow is None:
            return
        for request in follow(response, page.links):
            yield request
