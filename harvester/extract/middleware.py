"""Turn every HTML page response into a PageItem; spiders never build items."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse, Response
from scrapy.utils.asyncio import run_in_thread
from scrapy.utils.defer import deferred_from_coro

from harvester.extract.classify import NOT_INDEXED, PageType, Verdict, decide, read_signals
from harvester.extract.page import ExtractedPage, NoContent, extract_page, parse_html
from harvester.extract.pdf import PdfUnreadable, extract_pdf, is_pdf
from harvester.items import PageItem
from harvester.meta import DONT_EXTRACT, LINKS, RENDER_FALLBACK, RENDER_HTTP_ITEM
from harvester.render.frames import Frame, frames_of, merge_frames, same_site_iframes
from harvester.render.middleware import Renderer
from harvester.render.policy import fallback_reason
from harvester.report.cpu import stat_key, timed_call
from harvester.signals import page_failed, page_low_quality, page_skipped
from harvester.sites import SiteProfiles
from harvester.threads import Worker
from harvester.urls.canonical import canonical_url, compile_strip_params
from harvester.urls.rules import content_hash, host_key, in_scope

if TYPE_CHECKING:
    import scrapy
    from scrapy.crawler import Crawler
    from typing_extensions import Self

logger = logging.getLogger(__name__)


class ExtractionMiddleware:
    """Spider middleware: after a callback's own output, yield one PageItem for its HTML response.

    Extraction (trafilatura + markdownify, see ``harvester.extract.page``) runs in a worker
    thread so downloads go on meanwhile.
    Settings: ``HARVESTER_EXTRACTION_ENABLED``, ``HARVESTER_EXTRACTION_MIN_CHARS``,
    ``HARVESTER_CONTENT_SELECTOR`` (CSS of the main content, for every page of the crawl),
    ``HARVESTER_CONTENT_SELECTORS`` (``{"host" or "host:port": CSS}``, wins over the former),
    the site profile's ``content_selector`` (``harvester.sites``), ``HARVESTER_PDF_ENABLED`` (PDF
    responses become degraded pages, ``harvester.extract.pdf``),
    ``HARVESTER_MARKDOWN_CONVERTER``, ``HARVESTER_LOW_QUALITY_THRESHOLD`` (pages under it are
    stored but counted and listed in the run report),
    ``HARVESTER_MAX_PAGES`` (0 = no limit: after that many pages the spider closes with reason
    ``max_pages``; counted here, not when requests are made, so pages refused by robots.txt or
    failing do not use the budget).
    Meta: ``harvester_dont_extract`` (robots.txt, sitemaps...).
    Every page is classified (``harvester.extract.classify``): the verdict is the item's
    ``page_type``; blocked pages and login walls are skipped (reasons ``blocked``,
    ``login_wall``); in render mode ``auto`` the fallback policy (``harvester.render.policy``)
    may send the page to the browser once instead of storing the HTTP result.
    Stats: ``harvester/pages/type/<verdict>``, ``harvester/render/fallback``,
    ``harvester/render/fallback/<reason>``, ``harvester/render/learned_hosts``,
    ``harvester/pages/crawled``, ``harvester/pages/extracted``,
    ``harvester/pages/skipped/<reason>``, ``harvester/pages/failed/extraction_error``,
    ``harvester/pages/low_quality``, ``harvester/pages/degraded``,
    ``harvester/pages/generator/<name>``, ``harvester/pages/pdf``,
    ``harvester/pages/failed/{pdf_encrypted,pdf_corrupt}``, ``harvester/cpu_ms/extraction``.
    Signals sent: ``page_skipped``, ``page_failed``, ``page_low_quality``.
    """

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HARVESTER_EXTRACTION_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self._min_chars = crawler.settings.getint("HARVESTER_EXTRACTION_MIN_CHARS")
        self._max_pages = crawler.settings.getint("HARVESTER_MAX_PAGES")
        self._pages = 0
        self._profiles = SiteProfiles.from_crawler(crawler)
        self._pdf_enabled = crawler.settings.getbool("HARVESTER_PDF_ENABLED")
        self._selectors = crawler.settings.getdict("HARVESTER_CONTENT_SELECTORS")
        self._converter = crawler.settings.get("HARVESTER_MARKDOWN_CONVERTER")
        self._low_quality = crawler.settings.getfloat("HARVESTER_LOW_QUALITY_THRESHOLD")
        self._strip = compile_strip_params(crawler.settings.getlist("HARVESTER_URL_STRIP_PARAMS"))
        self._renderer = Renderer.from_crawler(crawler)
        # One page at a time, beside the reactor: extraction holds the interpreter lock nearly
        # throughout, so more threads add no speed, only memory (a tree and a soup each) and CPU
        # spent switching between them.
        self._worker = Worker("harvester-extraction")
        crawler.signals.connect(self._worker.close, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        # A page the browser was asked for after HTTP: what it gives decides whether its host
        # goes browser-direct, so that is learned before its links are scheduled.
        fallback = bool(response.meta.get(RENDER_FALLBACK)) and self._is_page(response)
        held = []
        async for element in result:
            if fallback:
                held.append(element)
            else:
                yield element
        # A browser re-request is the same page: it used its budget when HTTP fetched it.
        if self._is_page(response) and (fallback or self._within_budget()):
            output = await self._extract(response)
            for element in held:
                yield element
            if output is not None:
                yield output

    def _is_page(self, response: Response) -> bool:
        return (
            (isinstance(response, HtmlResponse) or self._is_pdf(response))
            and 200 <= response.status < 300
            and not response.meta.get(DONT_EXTRACT)
        )

    def _within_budget(self) -> bool:
        if not self._max_pages:
            return True
        if self._pages >= self._max_pages:
            return False
        self._pages += 1
        if self._pages == self._max_pages:
            logger.info("HARVESTER_MAX_PAGES=%d reached: closing the spider", self._max_pages)
            deferred_from_coro(self.crawler.engine.close_spider_async(reason="max_pages"))
        return True

    async def _extract(self, response: HtmlResponse) -> PageItem | scrapy.Request | None:
        stats = self.crawler.stats
        if self._is_pdf(response):  # never rendered: the browser would only show its viewer
            stats.inc_value("harvester/pages/crawled")
            return await self._extract_pdf(response)
        profile = self._profiles.for_url(response.url)
        try:
            (verdict, page, no_content, frames), cpu_ms = await self._worker.run(
                timed_call, self._classify_and_extract, response, profile.process_iframes
            )
            stats.inc_value(stat_key("extraction"), cpu_ms)
        except Exception:
            logger.exception("Extraction failed on %s", response.url)
            stats.inc_value("harvester/pages/crawled")
            self._report(page_failed, response.url, "extraction_error", "failed")
            return None
        rendered = "playwright" in response.flags
        if not rendered:
            self._renderer.learner.fetched_over_http(response.url)
        low_quality = page is not None and page.quality < self._low_quality
        reason = fallback_reason(profile, verdict, status=response.status, rendered=rendered, low_quality=low_quality,
                                 generator=page.generator if page is not None else None)
        if (reason is None and not rendered and profile.process_iframes and profile.render == "auto"
                and profile.fallback_enabled and frames):
            reason = "iframes"  # frames are only read in the browser (harvester.render.frames)
        if reason is not None and self._renderer.available(response.url):
            stats.inc_value("harvester/render/fallback")
            stats.inc_value(f"harvester/render/fallback/{reason}")
            logger.debug("Rendering %s in the browser (%s)", response.url, reason)
            http_item = self._page_item(response, page, verdict) if page is not None and verdict.type not in NOT_INDEXED else None
            return self._renderer.fallback_request(response, reason, http_item)
        stats.inc_value("harvester/pages/crawled")
        stats.inc_value(f"harvester/pages/type/{verdict.type.value}")
        kept = response.meta.get(RENDER_HTTP_ITEM)
        if rendered and response.meta.get(RENDER_FALLBACK):
            if verdict.type is PageType.CONTENT and page is not None:
                self._learn(response.url)
            elif kept is not None:  # the browser did worse than plain HTTP
                stats.inc_value("harvester/render/kept_http")
                return kept
        if verdict.type in NOT_INDEXED:
            self._report(page_skipped, response.url, verdict.type.value, "skipped")
            return None
        if page is None:
            self._report(page_skipped, response.url, no_content or "empty", "skipped")
            return None
        stats.inc_value("harvester/pages/extracted")
        self._count_quality(response.url, page)
        return self._page_item(response, page, verdict)

    def _classify_and_extract(
        self, response: HtmlResponse, with_frames: bool
    ) -> tuple[Verdict, ExtractedPage | None, str | None, list[Any]]:
        """In a worker thread: the page's signals (before extraction changes the tree), its
        extraction, its verdict; for rendered pages the frames' content joins the page's."""
        doc = _parsed_tree(response)
        if doc is None:
            try:
                doc = parse_html(response.text)
            except NoContent as exc:
                return Verdict(PageType.EMPTY, exc.reason), None, exc.reason, []
        signals = read_signals(doc, response.text)
        url = response.url
        page: ExtractedPage | None = None
        no_content: str | None = None
        try:
            page = extract_page(response.text, url, min_chars=self._min_chars,
                                content_selector=self._content_selector(url), converter=self._converter, doc=doc)
        except NoContent as exc:
            no_content = exc.reason
        frames: list[Any] = []
        if with_frames:
            if "playwright" in response.flags:
                frames = frames_of(response.meta)
                if frames and page is not None:
                    page = replace(page, markdown=merge_frames(page.markdown, frames, self._frame_markdown))
            else:
                frames = same_site_iframes(signals.iframes, url)
        verdict = decide(signals, response.status, len(page.markdown) if page is not None else 0)
        return verdict, page, no_content, frames

    def _frame_markdown(self, frame: Frame) -> str | None:
        try:
            return extract_page(frame.html, frame.url, min_chars=1, converter=self._converter).markdown
        except NoContent:
            return None

    def _learn(self, url: str) -> None:
        if self._renderer.learner.needed_browser(url):
            self.crawler.stats.inc_value("harvester/render/learned_hosts")
            logger.info("Pages of %s need the browser: rendering its further pages directly (after %d)",
                        urlsplit(url).netloc, self._renderer.learner.learn_after)

    def _is_pdf(self, response: Response) -> bool:
        return self._pdf_enabled and is_pdf(_header(response, b"Content-Type"), response.body)

    async def _extract_pdf(self, response: Response) -> PageItem | None:
        """A PDF response as a page (``harvester.extract.pdf``); an unreadable one is one log line."""
        try:
            page = await run_in_thread(extract_pdf, response.body, response.url, min_chars=self._min_chars)
        except NoContent as exc:
            self._report(page_skipped, response.url, exc.reason, "skipped")
            return None
        except PdfUnreadable as exc:
            logger.warning("Cannot read the PDF %s: %s", response.url, exc)
            self.crawler.stats.inc_value(f"harvester/pages/failed/{exc.reason}")
            self.crawler.signals.send_catch_log(page_failed, url=response.url, reason=exc.reason)
            return None
        self.crawler.stats.inc_value("harvester/pages/extracted")
        self.crawler.stats.inc_value("harvester/pages/pdf")
        self._count_quality(response.url, page)
        self.crawler.stats.inc_value(f"harvester/pages/type/{PageType.CONTENT.value}")
        item = self._page_item(response, page, Verdict(PageType.CONTENT, "pdf"))
        item.source_type = "pdf"
        return item

    def _content_selector(self, url: str) -> str | None:
        """``HARVESTER_CONTENT_SELECTORS`` for the host, else the site profile's resolved selector
        (``-a content_selector``/``-s HARVESTER_CONTENT_SELECTOR`` > profile > none)."""
        parts = urlsplit(url)
        for key in (host_key(url), parts.hostname or ""):
            if key in self._selectors:
                return str(self._selectors[key])
        return self._profiles.for_url(url).content_selector

    def _count_quality(self, url: str, page: ExtractedPage) -> None:
        stats = self.crawler.stats
        if page.generator:
            stats.inc_value(f"harvester/pages/generator/{page.generator}")
        if page.degraded:
            stats.inc_value("harvester/pages/degraded")
        if page.quality < self._low_quality:
            stats.inc_value("harvester/pages/low_quality")
            self.crawler.signals.send_catch_log(page_low_quality, url=url, quality=page.quality)

    def _report(self, signal: object, url: str, reason: str, kind: str) -> None:
        self.crawler.stats.inc_value(f"harvester/pages/{kind}/{reason}")
        logger.info("Page %s %s: %s", kind, reason, url)
        self.crawler.signals.send_catch_log(signal, url=url, reason=reason)

    def _page_item(self, response: HtmlResponse, page: ExtractedPage, verdict: Verdict) -> PageItem:
        url = self._final_url(response, page.canonical_url)
        return PageItem(
            url=url,
            title=page.title,
            markdown=page.markdown,
            lang=page.lang,
            description=page.description,
            headings=page.headings,
            breadcrumbs=page.breadcrumbs,
            section=" > ".join(page.breadcrumbs),
            content_hash=content_hash(page.markdown),
            etag=_header(response, b"ETag"),
            last_modified=_header(response, b"Last-Modified"),
            fetched_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            status=response.status,
            rendered="playwright" in response.flags,
            quality=page.quality,
            degraded=page.degraded,
            domain=(urlsplit(url).hostname or "").lower(),
            requested_url=response.request.url if response.request else response.url,
            aliases=self._aliases(response, url),
            links=list(response.meta.get(LINKS, ())),
            page_type=verdict.type.value,
        )

    def _aliases(self, response: HtmlResponse, url: str) -> list[str]:
        """The other URLs this page was reached by: redirects, and the fetched URL when the page
        names another canonical URL. The canonical one is claimed, so it is not fetched again."""
        fetched = [*response.meta.get("redirect_urls", ()), response.url]
        aliases = [u for u in dict.fromkeys(canonical_url(f, self._strip) for f in fetched) if u != url]
        claim = getattr(self.crawler.spider, "claim", None)
        if aliases and claim is not None:
            claim(url)
        return aliases

    def _final_url(self, response: HtmlResponse, canonical: str | None) -> str:
        """The page's canonical URL when it points inside the crawl's scope, else the final URL."""
        start = getattr(self.crawler.spider, "start_url", response.url)
        if canonical and in_scope(canonical, start):
            return canonical_url(canonical, self._strip)
        return canonical_url(response.url, self._strip)


def _parsed_tree(response: HtmlResponse) -> Any:
    """The lxml tree the spider's callback already parsed, if it did, so extraction does not parse
    the page again (the callback is done with it). Parsing here otherwise would block the reactor."""
    selector = getattr(response, "_cached_selector", None)  # set by TextResponse.selector
    return selector.root if selector is not None else None


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None
