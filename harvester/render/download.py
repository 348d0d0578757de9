"""The download handler for http and https when pages may be rendered (``harvester.addon``).

Scrapy's own HTTP/1.1 handler for every plain request; the browser handler
(``harvester.render.handler``, scrapy-playwright's) is imported and built with the first request
to render. Scrapy imports every registered handler's module when the engine starts, and importing
Playwright with scrapy-playwright would slow every crawl's start-up, though most crawls render no
page at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler

from harvester.state import crawl_state

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from harvester.render.handler import HarvesterPlaywrightHandler


class RenderingDownloadHandler(HTTP11DownloadHandler):
    """Plain requests here; ``meta["playwright"]`` requests in the one browser handler of the
    crawl (``CrawlState.playwright_handler``: Scrapy builds a handler per scheme, and http and https
    pages share one browser, one guard proxy and one cap), built by the first of them to need it,
    which closes it."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._crawler = crawler
        self._built: HarvesterPlaywrightHandler | None = None

    async def download_request(self, request: Request, spider: Spider | None = None) -> Response:  # type: ignore[override]
        if not request.meta.get("playwright"):
            return await super().download_request(request)
        return await self._browser_handler().download_request(request)

    def _browser_handler(self) -> HarvesterPlaywrightHandler:
        state = crawl_state(self._crawler)
        if state.playwright_handler is None:
            from harvester.render.handler import HarvesterPlaywrightHandler

            state.playwright_handler = self._built = HarvesterPlaywrightHandler.from_crawler(self._crawler)
        return state.playwright_handler

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            if self._built is not None:
                await self._built.close()
