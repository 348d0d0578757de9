"""The extraction middleware's template hold: the first pages of each host wait for its learned
template (``harvester.extract.template``), so that they are cleaned of it like the later ones."""

from __future__ import annotations

import logging
import pickle
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider
from scrapy.http import HtmlResponse, Response
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.request import request_from_dict

from harvester.extract.held_pages import HELD_FILE, HeldPages, load_requests, save_requests
from harvester.extract.template import TemplateLearner
from harvester.meta import TEMPLATE_SAMPLE
from harvester.recrawl.extension import Recrawl
from harvester.urls.hosts import host_key
from harvester.urls.rules import UrlRules

if TYPE_CHECKING:
    import scrapy
    from scrapy.crawler import Crawler

    from harvester.extract.extractor import PageExtractor, Prepared
    from harvester.extract.template import Template

logger = logging.getLogger(__name__)

# Extracts a page (without the template's blocks) into its output: an item, a browser request or none.
Finish = Callable[[HtmlResponse, "Template | None", "Prepared | None"], Awaitable[Any]]


class TemplateHold:
    """The pages of a host that learns its template (``HARVESTER_TEMPLATE_LEARNING`` or a site
    profile's ``template_learning``) wait here until its template is decided: at
    ``HARVESTER_TEMPLATE_SAMPLE`` pages, when the crawl runs out of pages, or when the page budget
    ends it (``release_all``); then each goes through ``finish``.

    A job paused with ``JOBDIR`` saves the waiting pages' requests there and fetches them again on
    resume. On a re-crawl, a host short of its sample is learned from stored pages fetched whole
    (meta ``harvester_template_sample``).
    Stats: ``harvester/template/learned_hosts``, ``harvester/template/too_long_to_learn``,
    ``harvester/template/sampled_pages``.
    """

    def __init__(self, crawler: Crawler, extractor: PageExtractor,
                 in_worker: Callable[..., Awaitable[Any]], finish: Finish) -> None:
        self.crawler = crawler
        self.learner = TemplateLearner(crawler.settings.getint("HARVESTER_TEMPLATE_SAMPLE"))
        self._extractor = extractor
        self._in_worker = in_worker
        self._finish = finish
        self._held = HeldPages()
        self._flushing = False
        self._sampled: set[str] = set()  # hosts whose stored pages were fetched to learn from
        self._jobdir = crawler.settings.get("JOBDIR")
        self._url_rules = UrlRules.from_crawler(crawler)
        crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @property
    def holding(self) -> bool:
        """Whether any page waits for its template."""
        return bool(self._held)

    def prepare(self, response: HtmlResponse) -> Prepared:
        """In the extraction worker: the page parsed and cut into blocks to learn from."""
        return self._extractor.prepare(response, self.learner)

    async def hold(self, host: str, prepared: Prepared) -> list[Any]:
        """The outputs of a prepared page of ``host``: none while it waits for the template, else
        its own with those of the pages that waited."""
        response = prepared.response
        template = self.learner.template(host)  # decided while this page was parsed?
        if prepared.doc is None or template is not None:  # nothing to wait for, or too late
            output = await self._finish(response, template, prepared)
            return [output] if output is not None else []
        self._held.add(host, prepared)
        if prepared.signature is None:  # too long to learn from: it waits for the others' template
            self.crawler.stats.inc_value("harvester/template/too_long_to_learn")
            return []
        if not self.learner.observe(host, response.url, prepared.signature):
            return []
        return await self._release(host)

    async def _release(self, host: str) -> list[Any]:
        """Decide ``host``'s template (if no page did) and extract the pages that waited for it."""
        template = self.learner.decide(host)
        if template and host in self._held:
            self.crawler.stats.inc_value("harvester/template/learned_hosts")
            logger.info("Learned the template of %s from %d pages", host, template.pages)
        outputs, removed = [], False
        for prepared in self._held.pop(host):
            output = await self._finish(prepared.response, template, prepared)
            removed = removed or prepared.removed
            if output is not None:
                outputs.append(output)
        self.learner.settle(host, removed)
        return outputs

    async def release_all(self) -> list[Any]:
        """Every host decided on the pages it has, and the outputs of all waiting pages."""
        outputs = []
        for host in self._held.hosts():
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
            for output in await self.release_all():
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
        held = self._held.requests()
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
            save_requests(path, saved)
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
            saved = load_requests(path)
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
        for host, held in self._held.by_host():
            # Only for pages the index holds (changed ones): pages never stored (search pages,
            # indexes) are fetched whole on every re-crawl and are no reason to fetch more.
            if host in self._sampled or not any(recrawl.stored(p.response.url) for p in held):
                continue
            self._sampled.add(host)
            have = {self._url_rules.canonical(p.response.url) for p in held}
            urls = [url for url in recrawl.pages if host_key(url) == host and url not in have]
            learned_from = sum(1 for p in held if p.signature is not None)  # not the pages too long to learn from
            for url in urls[: self.learner.sample - learned_from]:
                self.crawler.engine.crawl(Request(url, callback=self._sample_parsed, dont_filter=True,
                                                  meta={TEMPLATE_SAMPLE: True}))
                self.crawler.stats.inc_value("harvester/template/sampled_pages")
                scheduled = True
        return scheduled

    @staticmethod
    def _sample_parsed(response: Response) -> None:
        return None

    async def observe_sample(self, response: Response) -> None:
        """A stored page fetched whole (``_sample_stored_pages``): only learned from."""
        host = host_key(response.url)
        if not isinstance(response, HtmlResponse) or not 200 <= response.status < 300 or host not in self._held:
            return
        try:
            prepared = await self._in_worker(self.prepare, response)
        except Exception:
            logger.warning("Cannot learn from %s", response.url, exc_info=True)
            return
        if prepared.signature is not None:
            self.learner.observe(host, response.url, prepared.signature)
