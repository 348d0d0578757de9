"""Store each page once: exact duplicates become aliases, near duplicates are marked or dropped."""

from __future__ import annotations

import logging
import weakref
from collections import defaultdict
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import run_in_thread

from harvester.dedup.detect import NearDuplicates, signature
from harvester.exceptions import DuplicatePage, NearDuplicatePage
from harvester.recrawl.extension import Recrawl
from harvester.signals import page_aliased, page_near_duplicate

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from harvester.items import PageItem

logger = logging.getLogger(__name__)

NEAR_DUPLICATE_MODES = ("keep", "drop")


class DedupPipeline:
    """One stored page per content.

    - **Exact duplicates**: a page whose canonical URL or normalised content hash was already
      stored in this crawl is not stored again. Its URL (and the URLs it was reached by) become
      ``aliases`` of the stored page: on the stored item while it is still in the pipelines (so
      its feed line shows them), and through the ``page_aliased`` signal, by which the index adds
      them to the page's points (``metadata.aliases``) and the run report lists them. With
      ``HARVESTER_DEDUP_FEED_DUPLICATES`` the duplicate goes on to the feed as a line with
      ``duplicate_of`` and no chunks (nothing of it is stored); otherwise it is dropped.
    - **Near duplicates**: MinHash over word shingles of the Markdown, LSH for candidates. A page
      at least ``HARVESTER_NEAR_DUPLICATE_THRESHOLD`` similar to an earlier stored page is kept
      with ``near_duplicate_of`` (mode ``keep``) or dropped (mode ``drop``).

    Settings: ``HARVESTER_DEDUP_ENABLED``, ``HARVESTER_DEDUP_FEED_DUPLICATES``,
    ``HARVESTER_NEAR_DUPLICATE_THRESHOLD`` (0 = off), ``HARVESTER_NEAR_DUPLICATE_MODE``,
    ``HARVESTER_NEAR_DUPLICATE_SHINGLE`` (words per shingle). Stats: ``harvester/dedup/unique``,
    ``harvester/dedup/same_url``, ``harvester/dedup/same_content``, ``harvester/dedup/aliases``,
    ``harvester/dedup/near_duplicates`` and, through CoreStats,
    ``item_dropped_reasons_count/{DuplicatePage,NearDuplicatePage}``.
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("HARVESTER_DEDUP_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self._stats = crawler.stats
        self._feed_duplicates = settings.getbool("HARVESTER_DEDUP_FEED_DUPLICATES")
        self._near_mode = settings.get("HARVESTER_NEAR_DUPLICATE_MODE")
        if self._near_mode not in NEAR_DUPLICATE_MODES:
            raise NotConfigured(f"HARVESTER_NEAR_DUPLICATE_MODE must be one of {NEAR_DUPLICATE_MODES}")
        self._shingle = settings.getint("HARVESTER_NEAR_DUPLICATE_SHINGLE")
        threshold = settings.getfloat("HARVESTER_NEAR_DUPLICATE_THRESHOLD")
        self._near = NearDuplicates(threshold) if threshold > 0 else None
        self._crawler = crawler
        self._urls: set[str] = set()
        self._hashes: dict[str, str] = {}
        self.aliases: dict[str, list[str]] = defaultdict(list)
        # Stored pages still in the pipelines, so a late alias still reaches their feed line;
        # weak, so a page's Markdown and vectors are freed once it is exported.
        self._in_flight: weakref.WeakValueDictionary[str, PageItem] = weakref.WeakValueDictionary()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _unchanged_original(self, item: PageItem) -> str | None:
        """The stored page with this content that a re-crawl reached without fetching it (304)."""
        recrawl = self._crawler.get_extension(Recrawl)
        original = recrawl.unchanged_hashes.get(item.content_hash) if recrawl is not None else None
        return original if original != item.url else None

    async def process_item(self, item: PageItem) -> PageItem:
        if item.url in self._urls:
            return self._duplicate(item, item.url, "same_url")
        first = self._hashes.get(item.content_hash) or self._unchanged_original(item)
        if first is not None:
            return self._duplicate(item, first, "same_content")
        # Claimed before the MinHash is computed off the reactor, so a copy arriving meanwhile is
        # an exact duplicate of this page.
        self._urls.add(item.url)
        self._hashes[item.content_hash] = item.url
        for alias in item.aliases:
            self._add_alias(item.url, alias)
        if self._near is not None:
            await self._check_near(item)
        self._in_flight[item.url] = item
        self._stats.inc_value("harvester/dedup/unique")
        return item

    async def _check_near(self, item: PageItem) -> None:
        assert self._near is not None
        minhash = await run_in_thread(signature, item.markdown, shingle_size=self._shingle,
                                      num_perm=self._near.num_perm)
        match = self._near.match(minhash)
        if match is None:
            self._near.add(item.url, minhash)
            return
        original, similarity = match
        self._stats.inc_value("harvester/dedup/near_duplicates")
        self.crawler.signals.send_catch_log(
            page_near_duplicate, url=item.url, original=original, similarity=round(similarity, 3)
        )
        if self._near_mode == "drop":
            # Later exact copies of this page are copies of its original, which is what is stored.
            self._urls.discard(item.url)
            self._hashes[item.content_hash] = original
            raise NearDuplicatePage(
                f"{similarity:.0%} similar to {original}: {item.url}", log_level="INFO"
            )
        item.near_duplicate_of = original

    def _duplicate(self, item: PageItem, first: str, kind: str) -> PageItem:
        self._stats.inc_value(f"harvester/dedup/{kind}")
        for alias in (item.url, *item.aliases):
            self._add_alias(first, alias)
        if self._feed_duplicates and item.url != first:
            item.duplicate_of = first
            item.chunks = []
            return item
        if kind == "same_url":
            raise DuplicatePage(f"URL already stored: {item.url}", log_level="DEBUG")
        raise DuplicatePage(f"same content as {first}: {item.requested_url or item.url}", log_level="INFO")

    def _add_alias(self, url: str, alias: str) -> None:
        if alias == url or alias in self.aliases[url]:
            return
        self.aliases[url].append(alias)
        self._stats.inc_value("harvester/dedup/aliases")
        stored = self._in_flight.get(url)
        if stored is not None and alias not in stored.aliases:
            stored.aliases.append(alias)
        self.crawler.signals.send_catch_log(page_aliased, url=url, alias=alias)
