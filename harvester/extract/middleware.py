"""Turn every HTML page response into a PageItem; spiders never build items."""

from __future__ import annotations

import logging
import pickle
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.http import HtmlResponse, Response
from scrapy.utils.asyncio import run_in_thread
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.request import request_from_dict

from harvester.extract.classify import NOT_INDEXED, PageType, Signals, Verdict, decide, read_signals
from harvester.extract.page import (
    ExtractedPage,
    NoContent,
    check_text,
    extract_page,
    parse_html,
    template_scope,
)
from harvester.extract.pdf import PdfUnreadable, extract_pdf, is_pdf
from harvester.extract.template import (
    SAMPLE_MAX_BYTES,
    Block,
    PageSignature,
    Removal,
    Template,
    TemplateLearner,
    page_blocks,
    remove_template,
    signature,
)
from harvester.items import PageItem
from harvester.meta import LINKS, RENDER_FALLBACK, RENDER_HTTP_ITEM, TEMPLATE_SAMPLE, is_page_request
from harvester.recrawl.extension import Recrawl
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

# In JOBDIR: the requests of the pages that waited for their template when the job paused.
HELD_FILE = "harvester-template-held.pickle"


class ExtractionMiddleware:
    """Spider middleware: after a callback's own output, yield one PageItem for its HTML response.

    Extraction (trafilatura + the Markdown converter, see ``harvester.extract.page``) runs in a worker
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
    ``HARVESTER_TEMPLATE_LEARNING`` / a site profile's ``template_learning`` and
    ``HARVESTER_TEMPLATE_SAMPLE``: learned site templates (``harvester.extract.template``): the
    first pages of each host wait here until its template is decided (at the sample, when the
    crawl runs out of pages, or when the page budget ends it), then every page of the host is
    cleaned of it before conversion; a job paused with ``JOBDIR`` saves the waiting pages'
    requests there and fetches them again on resume; on a re-crawl, a host short of its sample is
    learned from stored pages fetched whole (meta ``harvester_template_sample``).
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
    ``harvester/pages/failed/{pdf_encrypted,pdf_corrupt}``, ``harvester/template/learned_hosts``,
    ``harvester/template/{pages,blocks}`` and ``harvester/template/{pages,blocks}/<host>`` (pages
    cleaned, template blocks removed), ``harvester/template/sampled_pages``,
    ``harvester/cpu_ms/extraction``.
    Signals sent: ``page_skipped``, ``page_failed``, ``page_low_quality``.
    """

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HARVESTER_EXTRACTION_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self._min_chars = crawler.settings.getint("HARVESTER_EXTRACTION_MIN_CHARS")
        self._max_pages = crawler.settings.getint("HARVESTER_MAX_PAGES")
        self._pages = 0
        self._budget_spent = False
        self._profiles = SiteProfiles.from_crawler(crawler)
        self._pdf_enabled = crawler.settings.getbool("HARVESTER_PDF_ENABLED")
        self._selectors = crawler.settings.getdict("HARVESTER_CONTENT_SELECTORS")
        self._converter = crawler.settings.get("HARVESTER_MARKDOWN_CONVERTER")
        self._low_quality = crawler.settings.getfloat("HARVESTER_LOW_QUALITY_THRESHOLD")
        self._strip = compile_strip_params(crawler.settings.getlist("HARVESTER_URL_STRIP_PARAMS"))
        self._renderer = Renderer.from_crawler(crawler)
        # Learned site templates (harvester.extract.template): the first pages of each host wait
        # here until the host's template is decided, so they are cleaned like the later ones.
        self._learner = TemplateLearner(crawler.settings.getint("HARVESTER_TEMPLATE_SAMPLE"))
        self._held: dict[str, list[_Prepared]] = {}
        self._flushing = False
        self._sampled: set[str] = set()  # hosts whose stored pages were fetched to learn from
        self._jobdir = crawler.settings.get("JOBDIR")
        crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)
        # One page at a time: extraction holds the interpreter lock nearly throughout, so more
        # threads add no speed, only memory (a tree each) and CPU spent switching between them.
        self._worker = Worker("harvester-extraction", crawler.settings.getint("HARVESTER_OFFLOAD_MIN_SIZE"))
        crawler.signals.connect(self._worker.close, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        if response.meta.get(TEMPLATE_SAMPLE):  # only learned from (see _sample_stored_pages)
            async for _ in result:
                pass
            await self._observe_sample(response)
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
            if self._budget_spent and self._held:
                # The spider closes now: no page waits for a template that will not come.
                outputs += await self._release_all()
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
        template = self._learner.template(host) if profile.template_learning else None
        if not profile.template_learning or template is not None:
            output = await self._finish(response, template)
            return [output] if output is not None else []
        try:
            prepared = await self._in_worker(self._prepare, response)
        except Exception:
            logger.exception("Extraction failed on %s", response.url)
            self.crawler.stats.inc_value("harvester/pages/crawled")
            self._report(page_failed, response.url, "extraction_error", "failed")
            return []
        template = self._learner.template(host)  # decided while this page was parsed?
        if prepared.doc is None or template is not None:  # nothing to wait for, or too late
            output = await self._finish(response, template, prepared)
            return [output] if output is not None else []
        self._held.setdefault(host, []).append(prepared)
        if prepared.signature is None:  # too long to learn from: it waits for the others' template
            self.crawler.stats.inc_value("harvester/template/too_long_to_learn")
            return []
        if not self._learner.observe(host, response.url, prepared.signature):
            return []
        return await self._release(host)

    def _prepare(self, response: HtmlResponse) -> _Prepared:
        """In the extraction worker: the page parsed, its signals and its blocks, before anything
        changes the tree."""
        try:
            doc = _document(response)
        except NoContent as exc:
            return _Prepared(response, None, None, None, None, exc.reason)
        signals = read_signals(doc, response.text)
        if len(response.body) > SAMPLE_MAX_BYTES or self._learner.template(host_key(response.url)) is not None:
            # Not walked for its blocks (they are read later, and only if the template removes
            # any: _classify_and_extract) when it is too long to learn from (a changelog of
            # several hundred KB costs as much to walk as a dozen ordinary pages, and the sample
            # is for the site's typical pages), or when the template was decided while it waited
            # for the worker: pages queue behind a long one, each sent here before the sample was
            # full (16 of the first 24 pages of the Scrapy docs). A dict lookup, safe from the
            # worker thread; the learner is otherwise only used from the reactor's.
            return _Prepared(response, doc, signals, None, None)
        blocks = self._blocks(doc, response.url)
        return _Prepared(response, doc, signals, blocks, signature(blocks))

    def _blocks(self, doc: Any, url: str) -> list[Block]:
        """The page's blocks where its template is learned and removed (before anything changes
        the tree)."""
        return page_blocks(template_scope(doc, self._content_selector(url)))

    async def _release(self, host: str) -> list[Any]:
        """Decide ``host``'s template (if no page did) and extract the pages that waited for it."""
        template = self._learner.decide(host)
        if template and host in self._held:
            self.crawler.stats.inc_value("harvester/template/learned_hosts")
            logger.info("Learned the template of %s from %d pages", host, template.pages)
        outputs, removed = [], False
        for prepared in self._held.pop(host, []):
            output = await self._finish(prepared.response, template, prepared)
            removed = removed or prepared.removed
            if output is not None:
                outputs.append(output)
        self._learner.settle(host, removed)
        return outputs

    async def _release_all(self) -> list[Any]:
        outputs = []
        for host in list(self._held):
            outputs += await self._release(host)
        return outputs

    def _spider_idle(self, spider: scrapy.Spider) -> None:
        """No page left to fetch: the hosts still learning (fewer pages than the sample) are
        decided on what they have, and their waiting pages go through the pipelines."""
        if self._held and not self._flushing:
            self._flushing = True
            deferred_from_coro(self._flush())
        if self._flushing:
            raise DontCloseSpider

    async def _flush(self) -> None:
        engine = self.crawler.engine
        try:
            if self._sample_stored_pages():
                return  # decided at the next idle, once the samples are in
            for output in await self._release_all():
                if isinstance(output, Request):
                    engine.crawl(output)
                else:
                    await engine.scraper.start_itemproc_async(output, response=None)
        finally:
            self._flushing = False
            # Check for idleness again now, not at the engine's next heartbeat (seconds away).
            slot = getattr(engine, "_slot", None)
            if slot is not None:
                slot.nextcall.schedule()

    def _spider_closed(self, spider: scrapy.Spider, reason: str) -> None:
        """A crawl that stops early (paused, a budget, a signal) with pages still waiting for their
        template: with ``JOBDIR``, their requests are saved there and fetched again when the job
        resumes (Scrapy remembers them as seen, so nothing else would); without it they are lost
        to this crawl only (a page never stored is new to the next one)."""
        held = [p.response.request for pages in self._held.values() for p in pages if p.response.request]
        if held:
            logger.info("%d pages were waiting for their site's template when the spider closed (%s)",
                        len(held), reason)
        if not self._jobdir:
            return
        path = Path(self._jobdir) / HELD_FILE
        saved = []
        for request in held:
            try:
                saved.append(request.to_dict(spider=spider))
            except Exception:  # a callback or meta that cannot be saved (a browser page)
                logger.warning("Cannot save %s for the resumed job", request.url)
        try:
            if saved:
                path.write_bytes(pickle.dumps(saved, protocol=4))
            else:
                path.unlink(missing_ok=True)
        except OSError as exc:
            logger.warning("Cannot save the pages waiting for their template in %s: %s", path, exc)

    def _spider_opened(self, spider: scrapy.Spider) -> None:
        """A resumed job fetches again the pages that waited for their template when it paused."""
        if not self._jobdir:
            return
        path = Path(self._jobdir) / HELD_FILE
        if not path.exists():
            return
        try:
            saved = pickle.loads(path.read_bytes())
            path.unlink()
        except (OSError, pickle.PickleError, EOFError) as exc:
            logger.warning("Cannot read %s: %s", path, exc)
            return
        for data in saved:
            self.crawler.engine.crawl(request_from_dict(data, spider=spider).replace(dont_filter=True))
        logger.info("Fetching again %d pages that waited for their site's template when the job paused",
                    len(saved))

    def _sample_stored_pages(self) -> bool:
        """On a re-crawl, a host still learning has too few pages fetched whole (the others
        answered 304): fetch some of its stored pages whole, to learn its template from as the
        first crawl did. True when requests were scheduled."""
        recrawl = self.crawler.get_extension(Recrawl)
        if recrawl is None or not recrawl.pages:
            return False
        scheduled = False
        for host, held in self._held.items():
            # Only for pages the index holds (changed ones): pages never stored (search pages,
            # indexes) are fetched whole on every re-crawl and are no reason to fetch more.
            if host in self._sampled or not any(recrawl.stored(p.response.url) for p in held):
                continue
            self._sampled.add(host)
            have = {canonical_url(p.response.url, self._strip) for p in held}
            urls = [url for url in recrawl.pages if host_key(url) == host and url not in have]
            learned_from = sum(1 for p in held if p.signature is not None)  # not the pages too long to learn from
            for url in urls[: self._learner.sample - learned_from]:
                self.crawler.engine.crawl(Request(url, callback=self._sample_parsed, dont_filter=True,
                                                  meta={TEMPLATE_SAMPLE: True}))
                self.crawler.stats.inc_value("harvester/template/sampled_pages")
                scheduled = True
        return scheduled

    @staticmethod
    def _sample_parsed(response: Response) -> None:
        return None

    async def _observe_sample(self, response: Response) -> None:
        host = host_key(response.url)
        if not isinstance(response, HtmlResponse) or not 200 <= response.status < 300 or host not in self._held:
            return
        try:
            prepared = await self._in_worker(self._prepare, response)
        except Exception:
            logger.warning("Cannot learn from %s", response.url, exc_info=True)
            return
        if prepared.signature is not None:
            self._learner.observe(host, response.url, prepared.signature)

    async def _finish(self, response: HtmlResponse, template: Template | None,
                      prepared: _Prepared | None = None) -> PageItem | scrapy.Request | None:
        """Classify and extract one HTML page (without ``template``'s blocks), then store it, skip
        it or send it to the browser."""
        stats = self.crawler.stats
        profile = self._profiles.for_url(response.url)
        try:
            verdict, page, no_content, frames, removal, generator = await self._in_worker(
                self._classify_and_extract, response, profile.process_iframes, template, prepared
            )
        except Exception:
            logger.exception("Extraction failed on %s", response.url)
            stats.inc_value("harvester/pages/crawled")
            self._report(page_failed, response.url, "extraction_error", "failed")
            return None
        finally:
            _drop_tree(response)
        if removal:
            host = host_key(response.url)
            stats.inc_value("harvester/template/pages")
            stats.inc_value("harvester/template/blocks", removal.blocks)
            stats.inc_value(f"harvester/template/pages/{host}")
            stats.inc_value(f"harvester/template/blocks/{host}", removal.blocks)
        rendered = "playwright" in response.flags
        if not rendered:
            self._renderer.learner.fetched_over_http(response.url)
        low_quality = page is not None and page.quality < self._low_quality
        reason = fallback_reason(profile, verdict, status=response.status, rendered=rendered, low_quality=low_quality,
                                 generator=generator)
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
        self, response: HtmlResponse, with_frames: bool, template: Template | None, prepared: _Prepared | None
    ) -> tuple[Verdict, ExtractedPage | None, str | None, list[Any], Removal, str | None]:
        """In the extraction worker: the page's signals (before extraction changes the tree), its
        extraction without the template's blocks, its verdict; for rendered pages the frames'
        content joins the page's. Last, the generator profile that recognised the page when its
        HTML held text, also when that was too short or only the site's menus (not kept)."""
        removal = Removal()
        if prepared is not None:
            if prepared.doc is None:
                return Verdict(PageType.EMPTY, prepared.no_content or "empty"), None, prepared.no_content, [], removal, None
            doc, signals, blocks = prepared.doc, prepared.signals, prepared.blocks
        else:
            try:
                doc = _document(response)
            except NoContent as exc:
                return Verdict(PageType.EMPTY, exc.reason), None, exc.reason, [], removal, None
            signals, blocks = read_signals(doc, response.text), None
        if blocks is None and template:  # not walked yet: too long to learn from, prepared late, or never held
            blocks = self._blocks(doc, response.url)

        def strip_template(root: Any) -> Removal:
            nonlocal removal
            removal = remove_template(blocks, template)
            return removal

        url = response.url
        page: ExtractedPage | None = None
        no_content = generator = None
        try:
            page = extract_page(response.text, url, min_chars=self._min_chars,
                                content_selector=self._content_selector(url), converter=self._converter, doc=doc,
                                template=strip_template if template and blocks else None)
            generator = page.generator
        except NoContent as exc:
            no_content, generator = exc.reason, exc.generator
        if prepared is not None and removal:
            # A sampled page: does the template change what is kept? If it changes no sampled page,
            # the host's further pages are spared the walk (TemplateLearner.settle).
            prepared.removed = _extracted(page) != _extracted(self._without_template(response))
        frames: list[Any] = []
        if with_frames:
            if "playwright" in response.flags:
                frames = frames_of(response.meta)
                if frames and page is not None:
                    page = replace(page, markdown=merge_frames(page.markdown, frames, self._frame_markdown))
            else:
                frames = same_site_iframes(signals.iframes, url)
        verdict = decide(signals, response.status, len(page.markdown) if page is not None else 0)
        if verdict.reason == "navigation_only":  # what extraction kept is the site's menus
            page, no_content = None, verdict.reason
        return verdict, page, no_content, frames, removal, generator

    def _without_template(self, response: HtmlResponse) -> ExtractedPage | None:
        try:
            return extract_page(response.text, response.url, min_chars=self._min_chars,
                                content_selector=self._content_selector(response.url), converter=self._converter)
        except NoContent:
            return None

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

    async def _in_worker(self, fn: Any, response: Response, *args: Any) -> Any:
        """``fn(response, *args)`` in the extraction thread (or in this one for a small page:
        ``harvester.threads.Worker``), its CPU time counted as extraction's."""
        result, cpu_ms = await self._worker.run_sized(len(response.body), timed_call, fn, response, *args)
        self.crawler.stats.inc_value(stat_key("extraction"), cpu_ms)
        return result

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


@dataclass
class _Prepared:
    """A page parsed and cut into blocks, waiting for its host's template."""

    response: HtmlResponse
    doc: Any
    signals: Signals | None
    blocks: list[Block] | None
    signature: PageSignature | None
    no_content: str | None = None
    removed: bool = False  # the template changed what extraction keeps of it


def _extracted(page: ExtractedPage | None) -> str | None:
    return page.markdown if page is not None else None


def _document(response: HtmlResponse) -> Any:
    """The page's lxml tree; NoContent when the body is no markup (binary, JSON, a PDF)."""
    doc = _parsed_tree(response)
    if doc is None:
        return parse_html(response.text)
    check_text(response.text)
    return doc


def _drop_tree(response: HtmlResponse) -> None:
    """Forget the page's parsed tree once extraction has changed it: whatever reads
    ``response.selector`` later gets the page parsed again, not what extraction left. The tree
    then goes with its last reference: Scrapy's Selector keeps its response, and the two (a large
    page's tree with them) otherwise waited for the collector to find the cycle."""
    if getattr(response, "_cached_selector", None) is not None:
        response._cached_selector = None


def _parsed_tree(response: HtmlResponse) -> Any:
    """The lxml tree the spider's callback already parsed, if it did, so extraction does not parse
    the page again (the callback is done with it). Parsing here otherwise would block the reactor."""
    selector = getattr(response, "_cached_selector", None)  # set by TextResponse.selector
    return selector.root if selector is not None else None


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None
