"""Which requests go through the browser, and the re-request of a page the browser should see.

The decisions are ``harvester.render.policy``'s; this module applies them to Scrapy requests:
``RenderRequestMiddleware`` marks the requests to render (``render=always``, a host learned to need
the browser, a fallback re-request) with scrapy-playwright's meta, and ``Renderer`` (used by
the extraction middleware, which sees the page) builds the fallback re-request.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

from harvester.meta import (
    CONDITIONAL,
    RENDER_DELAY,
    RENDER_FALLBACK,
    RENDER_HTTP_ITEM,
    RENDER_MARKED,
    UNCHANGED,
    is_page_request,
)
from harvester.render.browser import (
    NO_BROWSER,
    NO_EXTRA,
    NoBrowser,
    find_browser,
    playwright_installed,
)
from harvester.render.policy import RenderLearner, context_kwargs, context_name
from harvester.sites import SiteProfile, SiteProfiles
from harvester.state import crawl_state

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

HANDLER = "harvester.render.download.RenderingDownloadHandler"
# Meta of the HTTP fetch that must not carry over to its browser re-request.
_FETCH_META = ("download_", "redirect_", "retry_", "_", "playwright", "proxy", "ftp_")
_FETCH_META_KEYS = (CONDITIONAL, UNCHANGED, "handle_httpstatus_list",
                    "depth_reached", "dont_merge_cookies")


def render_problem(settings: BaseSettings) -> str | None:
    """Why no page can be rendered in this crawl (None: the browser is there)."""
    if not playwright_installed():
        return NO_EXTRA
    try:
        if find_browser(settings.get("HARVESTER_BROWSER_PATH")) is None:
            return NO_BROWSER
    except NoBrowser as exc:
        return str(exc)
    return None


class Renderer:
    """The crawl's rendering state, shared by the middlewares: the site profiles, the per-host
    learning and whether a browser is there. One per crawler (``Renderer.from_crawler``)."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.profiles = SiteProfiles.from_crawler(crawler)
        self.learner = RenderLearner(settings.getint("HARVESTER_RENDER_LEARN_AFTER"))
        self.problem = render_problem(settings) if settings.get("HARVESTER_RENDER") != "never" else "off"
        self.handler_ready = self.problem is None and _handler_registered(settings)
        if self.problem is None and not self.handler_ready:
            self.problem = "DOWNLOAD_HANDLERS do not send http(s) to a scrapy-playwright handler"
        self._max_size = settings.getint("DOWNLOAD_MAXSIZE")
        self._warned = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Renderer:
        state = crawl_state(crawler)
        if state.renderer is None:
            state.renderer = cls(crawler)
        return state.renderer

    def available(self, url: str) -> bool:
        """Whether a page can go through the browser; warns once when one should and cannot."""
        if self.handler_ready:
            return True
        self.crawler.stats.inc_value("harvester/render/unavailable")
        if not self._warned and self.problem != "off":
            self._warned = True
            logger.warning("A page needs JavaScript rendering (%s) but there is %s; keeping what plain "
                           "HTTP gave for this and every such page", url, self.problem)
        return False

    def mark(self, request: Request, profile: SiteProfile) -> None:
        """Send ``request`` through the browser with its site's rendering options."""
        from scrapy_playwright.page import PageMethod

        from harvester.render.frames import FRAMES
        from harvester.render.handler import inspect_page

        meta = request.meta
        meta["playwright"] = True
        meta["dont_cache"] = True  # HTTPCACHE (settings/dev.py) would answer with the HTTP fetch's body
        meta["playwright_context"] = context_name(profile)
        meta["playwright_context_kwargs"] = context_kwargs(profile)
        timeout_ms = profile.page_timeout_ms  # SiteProfiles converts settings given as text
        delay = profile.delay_before_return_html or 0.0
        meta["playwright_page_goto_kwargs"] = {"wait_until": profile.wait_until, "timeout": timeout_ms}
        methods: dict[str, Any] = {}
        if profile.wait_for:
            methods["wait_for"] = PageMethod("wait_for_selector", profile.wait_for, timeout=timeout_ms)
        if delay:
            meta[RENDER_DELAY] = delay
            methods["delay"] = PageMethod("wait_for_timeout", delay * 1000)
        methods[FRAMES] = PageMethod(inspect_page, max_size=self._max_size, frames=profile.process_iframes)
        meta["playwright_page_methods"] = methods
        # A browser asked for If-None-Match would show the 304's empty body.
        for name in (b"If-None-Match", b"If-Modified-Since"):
            request.headers.pop(name, None)

    def fallback_request(self, response: Response, reason: str, http_item: Any = None) -> Request:
        """The same page again, through the browser: same callback, past the dupefilter, once."""
        request = response.request
        assert request is not None
        meta = {k: v for k, v in response.meta.items()
                if not k.startswith(_FETCH_META) and k not in _FETCH_META_KEYS}
        meta[RENDER_FALLBACK] = reason
        if http_item is not None:
            meta[RENDER_HTTP_ITEM] = http_item
        errback = getattr(self.crawler.spider, "page_failed", None)  # not start_failed: HTTP got the page
        again = request.replace(url=response.url, meta=meta, dont_filter=True, errback=errback)
        for name in (b"If-None-Match", b"If-Modified-Since"):
            again.headers.pop(name, None)
        self.mark(again, self.profiles.for_url(response.url))
        return again


def _handler_registered(settings: BaseSettings) -> bool:
    """Whether http and https go to a handler that renders: Harvester's, or a scrapy-playwright one."""
    handlers = settings.getdict("DOWNLOAD_HANDLERS")
    named = [str(handlers.get(scheme) or "") for scheme in ("http", "https")]
    return all(HANDLER in name or "playwright" in name.lower() for name in named)


class RenderRequestMiddleware:
    """Downloader middleware: send the pages to render through the browser.

    A page request is rendered when its site's profile says ``render = "always"``, when its host
    learned to need the browser (``auto``, ``HARVESTER_RENDER_LEARN_AFTER``), or when it is the
    extraction middleware's fallback re-request. Each gets its profile's ``wait_until``,
    ``wait_for``, ``delay_before_return_html``, ``page_timeout_ms``, ``process_iframes`` and a
    browser context for its ``locale``, ``timezone_id`` and ``user_agent``.
    Stats: ``harvester/render/always``, ``harvester/render/learned_direct``,
    ``harvester/render/unavailable``.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.renderer = Renderer.from_crawler(crawler)
        if self.renderer.problem == "off":
            raise NotConfigured
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        meta = request.meta
        if not is_page_request(request) or meta.get(RENDER_MARKED):
            return
        meta[RENDER_MARKED] = True  # once: a redirect hop or retry keeps its meta
        if meta.get(RENDER_FALLBACK):
            return  # marked when built
        profile = self.renderer.profiles.for_url(request.url)
        if profile.render == "always":
            reason = "always"
        elif profile.render == "auto" and self.renderer.learner.direct(request.url):
            reason = "learned_direct"
        else:
            return
        if self.renderer.available(request.url):
            self.stats.inc_value(f"harvester/render/{reason}")
            self.renderer.mark(request, profile)
