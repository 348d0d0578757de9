"""Re-crawl bookkeeping shared by the components: stored pages, pages reached, pages gone, pruning.

One instance per crawl (``crawler.get_extension(Recrawl)``). The index pipeline fills it from the
collection when it opens and hands it the pruning step; the conditional request middleware, the
spiders and the pipelines read it and record what they reach.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from harvester.items import PageChange
from harvester.recrawl.state import StoredPage, prune_candidates
from harvester.urls.rules import UrlRules

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

RUNNING_MARKER = "harvester-running"
STATE_FILE = "harvester-recrawl.json"
# What Scrapy persists in JOBDIR: the pending requests, the seen-request fingerprints, spider.state.
SCRAPY_JOB_FILES = ("requests.queue", "requests.seen", "spider.state")

Pruner = Callable[[list[str]], None]


class Recrawl:
    """Extension holding what a re-crawl needs to know, and pruning at the end of a complete crawl.

    Pruning: stored pages inside the crawl's scope (``spider.wants``) that the crawl did not reach,
    and stored pages it fetched whole but did not index again (no content any more, a duplicate,
    another canonical URL), are deleted from the index, only when the spider closed with reason
    ``finished``; with ``HARVESTER_PRUNE_DRY_RUN`` they are only listed.

    JOBDIR: a marker file says a crawl is running. A crawl killed without closing (SIGKILL, power
    loss) leaves it behind; Scrapy's persisted request fingerprints then name requests whose pages
    may never have reached the index (they sat in the pipelines' buffers), and its queue files were
    never closed, so the next run with that JOBDIR discards Scrapy's job files and starts over,
    cheaply: pages already indexed answer 304 or hash equal. After a clean pause (one Ctrl-C), the
    job is resumed as Scrapy saved it, with the reached pages remembered in ``JOBDIR``.

    Feed lines: a stored page that answered 304, 404 or 410, or was pruned, gets a ``PageChange``
    line in the crawl's feeds (sent as ``item_scraped``; it passes no pipeline), so a re-crawl's
    feed says what happened to every page it requested; PageItems carry ``change`` themselves.

    Settings: ``HARVESTER_RECRAWL_ENABLED``, ``HARVESTER_PRUNE_ENABLED``,
    ``HARVESTER_PRUNE_DRY_RUN``, ``JOBDIR``.
    Stats: ``harvester/recrawl/{stored_pages,pruned,would_prune,deleted,unchanged_304,
    unchanged_hash,updated,new,chunks_embedded,chunks_reused,sitemap_lastmod_skipped}``.
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("HARVESTER_RECRAWL_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        # Stored pages are keyed by the URLs extraction stored, canonical under the crawl's rules.
        self.url_rules = UrlRules.from_crawler(crawler)
        self.pages: dict[str, StoredPage] = {}
        self.chunk_ids: set[str] = set()
        # Content hashes of the pages reached unchanged, so a copy of one at another URL is still
        # recognised as a duplicate although the original produced no item in this crawl.
        self.unchanged_hashes: dict[str, str] = {}
        self.reached: set[str] = set()
        self.gone: set[str] = set()
        self.deleted: set[str] = set()
        # Stored pages fetched whole (2xx) and the pages that reached the index: a stored page
        # fetched but not indexed again (now empty, a duplicate, moved to another canonical URL)
        # no longer belongs in the index.
        self.fetched: set[str] = set()
        self.indexed: set[str] = set()
        self.pruned: list[str] = []
        self.prune_enabled = settings.getbool("HARVESTER_PRUNE_ENABLED")
        self.dry_run = settings.getbool("HARVESTER_PRUNE_DRY_RUN")
        self._pruner: Pruner | None = None
        self.resumed_reached = 0
        self._listed: set[str] = set()
        self._prune_done = False
        self._jobdir = Path(settings["JOBDIR"]) if settings.get("JOBDIR") else None
        if self._jobdir is not None:
            self._open_job(self._jobdir)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    # The index pipeline's side.
    def load(self, pages: dict[str, StoredPage]) -> None:
        self.pages = pages
        self.chunk_ids = set().union(*(page.chunk_ids for page in pages.values()))
        self.crawler.stats.set_value("harvester/recrawl/stored_pages", len(pages))
        if self.resumed_reached:
            self.crawler.stats.set_value("harvester/recrawl/resumed_reached", self.resumed_reached)
        dirty = sum(not page.consistent for page in pages.values())
        logger.info("The index holds %d pages (%d to repair)", len(pages), dirty)

    def set_pruner(self, pruner: Pruner) -> None:
        """``pruner(urls)`` deletes the points of the pages at ``urls``."""
        self._pruner = pruner

    def take_gone(self) -> list[str]:
        """The stored pages that answered 404/410 since the last call; they count as deleted."""
        gone = sorted(url for url in self.gone if url in self.pages)
        self.deleted.update(gone)
        self.gone.clear()
        return gone

    # Everyone's side.
    def stored(self, url: str) -> StoredPage | None:
        return self.pages.get(self.url_rules.canonical(url))

    def reach(self, url: str) -> None:
        self.reached.add(self.url_rules.canonical(url))

    def mark_unchanged(self, url: str, status: int | None = None) -> None:
        """A stored page reached without fetching its content (304, sitemap lastmod); one that
        answered (``status``) gets an ``unchanged`` feed line."""
        page = self.stored(url)
        if page is not None:
            self.reached.add(page.url)
            self.unchanged_hashes.setdefault(page.content_hash, page.url)
            if status is not None:
                self._feed_line(page, "unchanged", status)

    def mark_gone(self, url: str, status: int | None = None) -> None:
        key = self.url_rules.canonical(url)
        if key in self.pages:
            self.gone.add(key)
            self._feed_line(self.pages[key], "removed", status)

    def _feed_line(self, page: StoredPage, change: str, status: int | None) -> None:
        """Send ``page``'s PageChange to the feeds, once per page and crawl."""
        spider = self.crawler.spider
        if spider is None or page.url in self._listed:
            return
        self._listed.add(page.url)
        line = PageChange(url=page.url, change=change, status=status, title=page.title,
                          content_hash=page.content_hash, etag=page.etag, last_modified=page.last_modified)
        self.crawler.signals.send_catch_log(signals.item_scraped, item=line, response=None, spider=spider)

    def count(self, what: str, value: int = 1) -> None:
        self.crawler.stats.inc_value(f"harvester/recrawl/{what}", value)

    def summary(self) -> dict[str, Any]:
        stats = self.crawler.stats
        keys = ("new", "updated", "unchanged_304", "unchanged_hash", "deleted", "pruned",
                "would_prune", "chunks_embedded", "chunks_reused", "sitemap_lastmod_skipped")
        figures: dict[str, Any] = {key: stats.get_value(f"harvester/recrawl/{key}", 0) for key in keys}
        figures["pruned_urls" if not self.dry_run else "would_prune_urls"] = list(self.pruned)
        return figures

    # Closing.
    def _spider_closed(self, spider: Spider, reason: str) -> None:
        # Connected before RunReport (a lower EXTENSIONS order builds it first) and synchronous,
        # so the report sees what was pruned.
        try:
            self.prune(spider, reason)
        finally:
            if self._jobdir is not None:
                self._close_job(self._jobdir, reason)

    def prune(self, spider: Spider, reason: str) -> None:
        """Prune once, when the spider closes (``EarlyPrune`` calls it before the feeds close)."""
        if self._prune_done:
            return
        self._prune_done = True
        self._prune(spider, reason)

    def _prune(self, spider: Spider, reason: str) -> None:
        if not self.prune_enabled or not self.pages or self._pruner is None:
            return
        if reason != "finished":
            logger.info("Not pruning: the crawl did not finish normally (%s)", reason)
            return
        wanted = getattr(spider, "wants", None)
        if wanted is None:
            return
        removed = self.gone | self.deleted
        candidates = prune_candidates(
            (url for url in self.pages if url not in removed), self.reached, wanted
        )
        dropped = (self.fetched & self.pages.keys()) - self.indexed - removed
        candidates = sorted({*candidates, *dropped})
        if not candidates:
            return
        self.pruned = candidates
        if self.dry_run:
            self.count("would_prune", len(candidates))
            logger.info("Dry run: would prune %d pages no longer reached: %s",
                        len(candidates), ", ".join(candidates[:20]))
            return
        self._pruner(candidates)
        for url in candidates:
            self._feed_line(self.pages[url], "removed", None)
        self.count("pruned", len(candidates))
        logger.info("Pruned %d pages no longer reached: %s", len(candidates), ", ".join(candidates[:20]))

    def _open_job(self, jobdir: Path) -> None:
        jobdir.mkdir(parents=True, exist_ok=True)
        marker = jobdir / RUNNING_MARKER
        if marker.exists():
            logger.warning(
                "JOBDIR %s belongs to a crawl that was killed: discarding Scrapy's job files and "
                "crawling again (pages already indexed are not embedded again)", jobdir,
            )
            _discard_job_files(jobdir)
        else:
            state_file = jobdir / STATE_FILE
            if state_file.exists():
                saved = json.loads(state_file.read_text(encoding="utf-8"))
                self.reached.update(saved.get("reached", ()))
                self.fetched.update(saved.get("fetched", ()))
                self.indexed.update(saved.get("indexed", ()))
                self.resumed_reached = len(self.reached)
        marker.write_text("", encoding="utf-8")

    def _close_job(self, jobdir: Path, reason: str) -> None:
        state_file = jobdir / STATE_FILE
        if reason == "finished":
            # A finished job leaves nothing to resume; its request fingerprints would make the next
            # crawl with this JOBDIR fetch nothing and then prune every page.
            _discard_job_files(jobdir)
        else:
            state = {"reached": sorted(self.reached), "fetched": sorted(self.fetched),
                     "indexed": sorted(self.indexed)}
            state_file.write_text(json.dumps(state), encoding="utf-8")
        (jobdir / RUNNING_MARKER).unlink(missing_ok=True)


class EarlyPrune:
    """Extension ordered before Scrapy's FeedExporter, whose ``spider_closed`` handler closes the
    feeds: it prunes first, so that the pruned pages' ``removed`` lines reach the feeds.
    Settings: ``HARVESTER_RECRAWL_ENABLED``."""

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HARVESTER_RECRAWL_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _spider_closed(self, spider: Spider, reason: str) -> None:
        recrawl = self.crawler.get_extension(Recrawl)
        if recrawl is not None:
            recrawl.prune(spider, reason)


def _discard_job_files(jobdir: Path) -> None:
    for name in (*SCRAPY_JOB_FILES, STATE_FILE):
        path = jobdir / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
