"""Turn every HTML page response into a PageItem; spiders never build items."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse, Response
from scrapy.utils.asyncio import run_in_thread
from scrapy.utils.defer import deferred_from_coro

from harvester.extract.extractor import Extraction, PageExtractor, drop_tree
from harvester.extract.outcome import PageOutcomes
from harvester.extract.page import NoContent
from harvester.extract.page_item import header
from harvester.extract.pdf import PdfUnreadable, extract_pdf, is_pdf
from harvester.extract.template_hold import TemplateHold
from harvester.items import PageItem
from harvester.meta import RENDER_FALLBACK, TEMPLATE_SAMPLE, is_page_request
from harvester.render.middleware import Renderer
from harvester.report.cpu import stat_key, timed_call
from harvester.site_markdown.twins import SiteMarkdown
from harvester.sites import SiteProfiles
from harvester.threads import Worker
from harvester.urls.hosts import host_key

if TYPE_CHECKING:
    from typing import Self

    import scrapy
    from scrapy.crawler import Crawler

    from harvester.extract.extractor import Prepared
    from harvester.extract.template import Template

logger = logging.getLogger(__name__)


class ExtractionMiddleware:
    """Spider middleware: after a callback's own output, yield one PageItem for its HTML response.

    Extraction (trafilatura + the Markdown converter, see ``harvester.extract.page``) runs in a worker
    thread so downloads go on meanwhile (``harvester.extract.extractor``).
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
    Learned site templates: the first pages of each host wait for its template
    (``harvester.extract.template_hold``, which lists its settings and stats), then every page of
    the host is cleaned of it before conversion.
    A page's own Markdown replaces its conversion where it holds what the HTML shows
    (``harvester.site_markdown.twins``, which lists its settings and stats).
    Meta: ``harvester_dont_extract`` (robots.txt, sitemaps...).
    Every page is classified (``harvester.extract.classify``): the verdict is the item's
    ``page_type``; blocked pages and login walls are skipped (reasons ``blocked``,
    ``login_wall``); in render mode ``auto`` the fallback policy (``harvester.render.policy``)
    may send the page to the browser once instead of storing the HTTP result.
    Stats: ``harvester/pages/type/<verdict>``, ``harvester/render/fallback``,
    ``harvester/render/fallback/<reason>``, ``harvester/render/learned_hosts``,
    ``harvester/render/kept_http``,
    ``harvester/pages/crawled``, ``harvester/pages/extracted``,
    ``harvester/pages/skipped/<reason>``, ``harvester/pages/failed/extraction_error``,
    ``harvester/pages/low_quality``, ``harvester/pages/degraded``,
    ``harvester/pages/generator/<name>``, ``harvester/pages/pdf``,
    ``harvester/pages/failed/{pdf_encrypted,pdf_corrupt}``,
    ``harvester/template/{pages,blocks}`` and ``harvester/template/{pages,blocks}/<host>`` (pages
    cleaned, template blocks removed), ``harvester/cpu_ms/extraction``.
    Signals sent: ``page_skipped``, ``page_failed``, ``page_low_quality``.
    """

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HARVESTER_EXTRACTION_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        settings = crawler.settings
        self._min_chars = settings.getint("HARVESTER_EXTRACTION_MIN_CHARS")
        self._max_pages = settings.getint("HARVESTER_MAX_PAGES")
        self._pages = 0
        self._budget_spent = False
        self._profiles = SiteProfiles.from_crawler(crawler)
        self._pdf_enabled = settings.getbool("HARVESTER_PDF_ENABLED")
        self._outcomes = PageOutcomes(crawler, Renderer.from_crawler(crawler))
        self._extractor = PageExtractor(min_chars=self._min_chars, converter=settings.get("HARVESTER_MARKDOWN_CONVERTER"),
                                        selectors=settings.getdict("HARVESTER_CONTENT_SELECTORS"), profiles=self._profiles)
        self._site_markdown = SiteMarkdown.from_crawler(crawler)
        self._hold = TemplateHold(crawler, self._extractor, self._in_worker, self._finish)
        # One page at a time: extraction holds the interpreter lock nearly throughout, so more
        # threads add no speed, only memory (a tree each) and CPU spent switching between them.
        self._worker = Worker("harvester-extraction", settings.getint("HARVESTER_OFFLOAD_MIN_SIZE"))
        crawler.signals.connect(self._worker.close, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        if response.meta.get(TEMPLATE_SAMPLE):  # only learned from (TemplateHold samples stored pages)
            async for _ in result:
                pass
            await self._hold.observe_sample(response)
            return
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
            outputs = await self._extract(response)
            if self._budget_spent and self._hold.holding:
                # The spider closes now: no page waits for a template that will not come.
                outputs += await self._hold.release_all()
            for element in held:
                yield element
            for output in outputs:
                yield output

    def _is_page(self, response: Response) -> bool:
        return (
            (isinstance(response, HtmlResponse) or self._is_pdf(response))
            and 200 <= response.status < 300
            and is_page_request(response)
        )

    def _within_budget(self) -> bool:
        if not self._max_pages:
            return True
        if self._pages >= self._max_pages:
            return False
        self._pages += 1
        if self._pages == self._max_pages:
            logger.info("HARVESTER_MAX_PAGES=%d reached: closing the spider", self._max_pages)
            self._budget_spent = True
            deferred_from_coro(self.crawler.engine.close_spider_async(reason="max_pages"))
        return True

    async def _extract(self, response: HtmlResponse) -> list[Any]:
        """The page's outputs: none while its host's template is being learned (the page waits),
        else its item or browser request, with those of the pages that waited for the template."""
        if self._is_pdf(response):  # never rendered: the browser would only show its viewer
            self.crawler.stats.inc_value("harvester/pages/crawled")
            item = await self._extract_pdf(response)
            return [item] if item is not None else []
        profile = self._profiles.for_url(response.url)
        host = host_key(response.url)
        template = self._hold.learner.template(host) if profile.template_learning else None
        if not profile.template_learning or template is not None:
            output = await self._finish(response, template)
            return [output] if output is not None else []
        try:
            prepared = await self._in_worker(self._hold.prepare, response)
        except Exception:
            logger.exception("Extraction failed on %s", response.url)
            self._outcomes.failed(response.url)
            return []
        return await self._hold.hold(host, prepared)

    async def _finish(self, response: HtmlResponse, template: Template | None,
                      prepared: Prepared | None = None) -> PageItem | scrapy.Request | None:
        """Classify and extract one HTML page (without ``template``'s blocks), then store it, skip
        it or send it to the browser."""
        profile = self._profiles.for_url(response.url)
        try:
            extraction: Extraction = await self._in_worker(
                self._extractor.classify_and_extract, response, profile.process_iframes, template, prepared
            )
        except Exception:
            logger.exception("Extraction failed on %s", response.url)
            self._outcomes.failed(response.url)
            return None
        finally:
            drop_tree(response)
        output = self._outcomes.of_html(response, profile, extraction)
        if self._site_markdown is not None and isinstance(output, PageItem):
            await self._site_markdown.use_twin(output, response)
        return output

    async def _in_worker(self, fn: Any, response: Response, *args: Any) -> Any:
        """``fn(response, *args)`` in the extraction thread (or in this one for a small page:
        ``harvester.threads.Worker``), its CPU time counted as extraction's."""
        result, cpu_ms = await self._worker.run_sized(len(response.body), timed_call, fn, response, *args)
        self.crawler.stats.inc_value(stat_key("extraction"), cpu_ms)
        return result

    def _is_pdf(self, response: Response) -> bool:
        return self._pdf_enabled and is_pdf(header(response, b"Content-Type"), response.body)

    async def _extract_pdf(self, response: Response) -> PageItem | None:
        """A PDF response as a page (``harvester.extract.pdf``); an unreadable one is one log line."""
        try:
            page = await run_in_thread(extract_pdf, response.body, response.url, min_chars=self._min_chars)
        except NoContent as exc:
            self._outcomes.skipped(response.url, exc.reason)
            return None
        except PdfUnreadable as exc:
            self._outcomes.unreadable_pdf(response.url, exc)
            return None
        return self._outcomes.of_pdf(response, page)
