"""What becomes of an extracted page: stored as a PageItem, skipped, or fetched again through the
browser; and how each is counted and reported. The extraction middleware's other half."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from scrapy.http import TextResponse

from harvester.extract.classify import NOT_INDEXED, PageType, Verdict
from harvester.extract.page_item import page_item
from harvester.meta import RENDER_FALLBACK, RENDER_HTTP_ITEM
from harvester.render.policy import fallback_reason
from harvester.signals import page_failed, page_low_quality, page_skipped
from harvester.urls.hosts import host_key
from harvester.urls.rules import UrlRules
from harvester.versions.detect import page_version

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import HtmlResponse, Response

    from harvester.extract.extractor import Extraction
    from harvester.extract.page import ExtractedPage
    from harvester.extract.pdf import PdfUnreadable
    from harvester.extract.template import Removal
    from harvester.items import PageItem
    from harvester.render.middleware import Renderer
    from harvester.sites import SiteProfile

logger = logging.getLogger(__name__)


class PageOutcomes:
    """Turns each page's extraction into its output and counts it (the stats and signals are
    listed by ``harvester.extract.middleware.ExtractionMiddleware``)."""

    def __init__(self, crawler: Crawler, renderer: Renderer) -> None:
        self.crawler = crawler
        self._renderer = renderer
        self._low_quality = crawler.settings.getfloat("HARVESTER_LOW_QUALITY_THRESHOLD")
        self._url_rules = UrlRules.from_crawler(crawler)
        pattern = crawler.settings.get("HARVESTER_VERSION_PATTERN")
        self._version_pattern = re.compile(pattern) if pattern else None

    def of_html(self, response: HtmlResponse, profile: SiteProfile, extraction: Extraction) -> PageItem | Request | None:
        """Store the page, skip it or send it to the browser."""
        stats = self.crawler.stats
        verdict, page = extraction.verdict, extraction.page
        self._count_template(response.url, extraction.removal)
        rendered = "playwright" in response.flags
        if not rendered:
            self._renderer.learner.fetched_over_http(response.url)
        browser_request = self._render_fallback(response, profile, extraction, rendered)
        if browser_request is not None:
            return browser_request
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
            self.skipped(response.url, verdict.type.value)
            return None
        if page is None:
            self.skipped(response.url, extraction.no_content or "empty")
            return None
        stats.inc_value("harvester/pages/extracted")
        self._count_quality(response.url, page)
        return self._page_item(response, page, verdict)

    def of_pdf(self, response: Response, page: ExtractedPage) -> PageItem:
        stats = self.crawler.stats
        stats.inc_value("harvester/pages/extracted")
        stats.inc_value("harvester/pages/pdf")
        self._count_quality(response.url, page)
        stats.inc_value(f"harvester/pages/type/{PageType.CONTENT.value}")
        item = self._page_item(response, page, Verdict(PageType.CONTENT, "pdf"))
        item.source_type = "pdf"
        return item

    def unreadable_pdf(self, url: str, exc: PdfUnreadable) -> None:
        logger.warning("Cannot read the PDF %s: %s", url, exc)
        self.crawler.stats.inc_value(f"harvester/pages/failed/{exc.reason}")
        self.crawler.signals.send_catch_log(page_failed, url=url, reason=exc.reason)

    def failed(self, url: str) -> None:
        """Extraction raised (the caller logs the traceback)."""
        self.crawler.stats.inc_value("harvester/pages/crawled")
        self._report(page_failed, url, "extraction_error", "failed")

    def skipped(self, url: str, reason: str) -> None:
        self._report(page_skipped, url, reason, "skipped")

    def _render_fallback(self, response: HtmlResponse, profile: SiteProfile, extraction: Extraction,
                         rendered: bool) -> Request | None:
        """The page again through the browser, when the fallback policy asks for it and a browser
        is there."""
        verdict, page = extraction.verdict, extraction.page
        low_quality = page is not None and page.quality < self._low_quality
        reason = fallback_reason(profile, verdict, status=response.status, rendered=rendered, low_quality=low_quality,
                                 generator=extraction.generator)
        if (reason is None and not rendered and profile.process_iframes and profile.render == "auto"
                and profile.fallback_enabled and extraction.frames):
            reason = "iframes"  # frames are only read in the browser (harvester.render.frames)
        if reason is None or not self._renderer.available(response.url):
            return None
        self.crawler.stats.inc_value("harvester/render/fallback")
        self.crawler.stats.inc_value(f"harvester/render/fallback/{reason}")
        logger.debug("Rendering %s in the browser (%s)", response.url, reason)
        http_item = self._page_item(response, page, verdict) if page is not None and verdict.type not in NOT_INDEXED else None
        return self._renderer.fallback_request(response, reason, http_item)

    def _learn(self, url: str) -> None:
        if self._renderer.learner.needed_browser(url):
            self.crawler.stats.inc_value("harvester/render/learned_hosts")
            logger.info("Pages of %s need the browser: rendering its further pages directly (after %d)",
                        host_key(url), self._renderer.learner.learn_after)

    def _count_template(self, url: str, removal: Removal) -> None:
        if not removal:
            return
        host = host_key(url)
        stats = self.crawler.stats
        stats.inc_value("harvester/template/pages")
        stats.inc_value("harvester/template/blocks", removal.blocks)
        stats.inc_value(f"harvester/template/pages/{host}")
        stats.inc_value(f"harvester/template/blocks/{host}", removal.blocks)

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

    def _page_item(self, response: Response, page: ExtractedPage, verdict: Verdict) -> PageItem:
        url = self._final_url(response, page.canonical_url)
        item = page_item(response, page, verdict, url, self._aliases(response, url))
        html = response.text if isinstance(response, TextResponse) else ""
        found = page_version(url, html, declared=getattr(self.crawler.spider, "version", None),
                             pattern=self._version_pattern)
        item.version, item.version_file = found.version, found.resolve_at
        item.versions = [found.version] if found.version else []
        return item

    def _aliases(self, response: Response, url: str) -> list[str]:
        """The other URLs this page was reached by: redirects, and the fetched URL when the page
        names another canonical URL. The canonical one is claimed, so it is not fetched again."""
        fetched = [*response.meta.get("redirect_urls", ()), response.url]
        aliases = [u for u in dict.fromkeys(self._url_rules.canonical(f) for f in fetched) if u != url]
        claim = getattr(self.crawler.spider, "claim", None)
        if aliases and claim is not None:
            claim(url)
        return aliases

    def _final_url(self, response: Response, canonical: str | None) -> str:
        """The page's canonical URL when it points inside the crawl's scope, else the final URL."""
        start = getattr(self.crawler.spider, "start_url", response.url)
        if canonical and self._url_rules.in_scope(canonical, start):
            return self._url_rules.canonical(canonical)
        return self._url_rules.canonical(response.url)
