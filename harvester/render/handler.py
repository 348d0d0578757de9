"""scrapy-playwright's download handler, kept safe and bounded for Harvester.

Built with the first page to render by the handler registered for http and https
(``harvester.render.download``), which takes every request without ``meta["playwright"]``.

What it adds to scrapy-playwright:

- **The SSRF guard.** The browser's every connection (documents, sub-resources, each redirect
  hop, WebSockets, popups, service workers, its own DNS lookups) goes through a local validating
  proxy (``harvester.proxy.guard_proxy.GuardProxy``) that checks the resolved address against the
  same rules as Scrapy's requests. Route interception alone would see only the first URL of a
  redirect chain. The proxy starts with the browser and stops with it.
- **Lazy start.** Playwright and the browser start on the first page to render, not at engine
  start, so a crawl whose pages are all plain HTML runs no browser.
- **Bounds.** A global cap on pages rendering at once (``HARVESTER_RENDER_CONCURRENCY``);
  ``DOWNLOAD_MAXSIZE`` on the rendered HTML (scrapy-playwright ignores Scrapy's); every page is
  closed when its request ends, however it ends (scrapy-playwright closes it on errors, not when
  the download is cancelled); popups are closed as they open; images, fonts and media are not
  downloaded (``abort_heavy_request``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError
from scrapy.exceptions import IgnoreRequest
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler
from scrapy_playwright.provider import PlaywrightBrowserProvider

from harvester.meta import FRAMES, RENDER_DELAY
from harvester.render.browser import BROWSER_SERVICES, proxy_bypass_arg
from harvester.render.frames import MAX_FRAMES, same_site

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page
    from playwright.async_api import Request as BrowserRequest
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy_playwright.handler import Config

logger = logging.getLogger(__name__)

HEAVY_RESOURCES = frozenset({"image", "font", "media"})
__all__ = ["FRAMES", "HarvesterPlaywrightHandler", "abort_heavy_request", "inspect_page"]


def abort_heavy_request(request: BrowserRequest) -> bool:
    """``PLAYWRIGHT_ABORT_REQUEST``: images, fonts and media never change a page's text."""
    return request.resource_type in HEAVY_RESOURCES


class RenderedTooLarge(IgnoreRequest):
    """The rendered page is over ``DOWNLOAD_MAXSIZE``."""


class RenderTimeout(IgnoreRequest):
    """The render took longer than its budget (a page whose script never yields)."""


async def inspect_page(page: Page, *, max_size: int, frames: bool) -> list[dict[str, str]]:
    """The last page method of every rendered request: refuse a page over ``max_size`` before
    its HTML is copied out of the browser, and read its same-site frames when asked."""
    size = await page.evaluate("() => document.documentElement ? document.documentElement.outerHTML.length : 0")
    if max_size and size > max_size:
        raise RenderedTooLarge(f"rendered page {page.url} has {size} characters, over DOWNLOAD_MAXSIZE={max_size}")
    if not frames:
        return []
    found: list[dict[str, str]] = []
    total = size
    for frame in page.frames[1:]:
        if len(found) >= MAX_FRAMES or not same_site(frame.url, page.url):
            continue
        with suppress(PlaywrightError):
            html = await frame.content()
            total += len(html)
            if max_size and total > max_size:
                break
            found.append({"url": frame.url, "title": await frame.title(), "html": html})
    return found


class GuardedBrowserProvider(PlaywrightBrowserProvider):
    """Launches Chromium with every connection sent through the guard proxy, started here (with
    the browser) and stopped at close. ``guard`` makes the (unstarted) ``GuardProxy``."""

    def __init__(self, config: Config, *, guard: Callable[[], Any]) -> None:
        super().__init__(config)
        self._make_guard = guard
        self._guard: Any = None
        self._server = ""

    async def launch_browser(self) -> Browser:
        if self._guard is None:
            self._guard = self._make_guard()
            self._server = self._guard.start()
            logger.info("Browser traffic goes through the SSRF guard proxy at %s", self._server)
        options = dict(self.config.launch_options)
        options["proxy"] = {"server": self._server, "bypass": ",".join(BROWSER_SERVICES)}
        args = [a for a in options.get("args") or [] if not a.startswith("--proxy-bypass-list")]
        options["args"] = [*args, proxy_bypass_arg()]
        self.config.launch_options = options
        return await super().launch_browser()

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            if self._guard is not None:
                self._guard.stop()
                self._guard = None


class HarvesterPlaywrightHandler(ScrapyPlaywrightDownloadHandler):
    """Settings: ``HARVESTER_RENDER_CONCURRENCY`` (pages rendering at once, all contexts
    together), ``DOWNLOAD_MAXSIZE``, ``HARVESTER_SSRF_GUARD_ENABLED``, ``HARVESTER_ALLOWED_HOSTS``,
    ``HARVESTER_PROXY`` / ``HARVESTER_PROXY_MODE`` (the guard proxy chains to it as the mode says:
    ``harvester.proxy.browser_guard_proxy``).
    Stats: ``harvester/render/pages``, ``harvester/render/failed``, ``harvester/render/too_large``,
    ``harvester/render/over_budget``, ``harvester/render/pages_closed_by_harvester`` (pages
    scrapy-playwright left open: a cancelled render),
    ``harvester/render/popups_closed``, and scrapy-playwright's ``playwright/...``.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        stats = crawler.stats

        def count(event: str) -> None:  # called in the proxy's thread
            from twisted.internet import reactor

            reactor.callFromThread(stats.inc_value, f"harvester/render/proxy/{event}")  # type: ignore[attr-defined]

        def guard() -> Any:
            # The allow-list, the guard switch, and HARVESTER_PROXY as the mode says.
            from harvester.proxy import browser_guard_proxy

            return browser_guard_proxy(settings, on_event=count)

        def provider(config: Config) -> GuardedBrowserProvider:
            return GuardedBrowserProvider(config, guard=guard)

        self.browser_provider_cls = provider  # type: ignore[assignment]
        self._slots = asyncio.Semaphore(max(1, settings.getint("HARVESTER_RENDER_CONCURRENCY")))
        self._max_size = settings.getint("DOWNLOAD_MAXSIZE")
        self._timeout_ms = settings.getint("HARVESTER_RENDER_TIMEOUT_MS")
        self._started = False
        self._start_lock = asyncio.Lock()
        self._pages: dict[int, Page] = {}
        # The loop holds tasks weakly: popups being closed are kept here until they are.
        self._closing: set[asyncio.Future[None]] = set()

    # scrapy-playwright starts Playwright when the engine starts; here it waits for a page.
    async def _maybe_launch_in_thread(self) -> None:
        return None

    def _engine_started(self) -> None:  # type: ignore[override]
        return None

    async def _start(self) -> None:
        async with self._start_lock:
            if not self._started:
                await self._launch()
                self._started = True

    async def download_request(self, request: Request, spider: Spider | None = None) -> Response:  # type: ignore[override]
        if not request.meta.get("playwright"):
            return await super().download_request(request)
        stats = self.stats
        async with self._slots:
            try:
                await self._start()
                # Playwright's timeouts bound navigation and waiting, not a page whose script never
                # yields (evaluate and content() would wait forever): the whole render has a budget.
                response = await asyncio.wait_for(super().download_request(request), self._budget(request))
            except TimeoutError as exc:
                stats.inc_value("harvester/render/failed")
                stats.inc_value("harvester/render/over_budget")
                raise RenderTimeout(f"rendering {request.url} took longer than {self._budget(request):.0f} s") from exc
            except RenderedTooLarge:
                stats.inc_value("harvester/render/too_large")
                stats.inc_value("harvester/render/failed")
                raise
            except BaseException:
                stats.inc_value("harvester/render/failed")
                raise
            finally:
                await self._close_page(request)
        if self._max_size and len(response.body) > self._max_size:
            stats.inc_value("harvester/render/too_large")
            stats.inc_value("harvester/render/failed")
            raise RenderedTooLarge(f"rendered page {request.url} is over DOWNLOAD_MAXSIZE={self._max_size}")
        stats.inc_value("harvester/render/pages")
        return response

    def _budget(self, request: Request) -> float:
        """Seconds a render may take: navigation, ``wait_for`` and the delay, each bounded by the
        page timeout, plus a margin for reading the page."""
        timeout_ms = (request.meta.get("playwright_page_goto_kwargs") or {}).get("timeout") or self._timeout_ms
        return 3 * timeout_ms / 1000 + float(request.meta.get(RENDER_DELAY) or 0) + 10

    async def _create_page(self, request: Request, spider: Spider) -> Page:
        page = await super()._create_page(request, spider)
        self._pages[id(request)] = page
        page.on("popup", self._close_popup)
        return page

    def _close_popup(self, popup: Page) -> None:
        self.stats.inc_value("harvester/render/popups_closed")
        closing = asyncio.ensure_future(_close_quietly(popup))
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    async def _close_page(self, request: Request) -> None:
        page = self._pages.pop(id(request), None)
        if page is not None and not page.is_closed():
            self.stats.inc_value("harvester/render/pages_closed_by_harvester")
            # Shielded: when the download was cancelled (DOWNLOAD_TIMEOUT), this still runs to the end.
            with suppress(asyncio.CancelledError):
                await asyncio.shield(_close_quietly(page))


async def _close_quietly(page: Page) -> None:
    with suppress(PlaywrightError):
        await page.close()
