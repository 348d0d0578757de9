"""Store each page once: exact duplicates become aliases, near duplicates are marked or dropped;
and store a chunk repeated across the crawl's pages (a warning box, a footer paragraph) once."""

from __future__ import annotations

import functools
import logging
import weakref
from collections import defaultdict
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured

from harvester.dedup.aggregate import AggregateDetector, passage_key, passages, sampled_shingles
from harvester.dedup.detect import BoilerplateCounter, NearDuplicates, signature, text_key
from harvester.exceptions import AggregatePage, DuplicatePage, NearDuplicatePage
from harvester.index.ids import boilerplate_point_id
from harvester.recrawl.extension import Recrawl
from harvester.report.cpu import cpu_stage, stat_key, timed_call
from harvester.signals import (
    chunks_superseded,
    page_aggregate,
    page_aliased,
    page_near_duplicate,
    page_skipped,
    page_versioned,
)
from harvester.threads import Worker
from harvester.versions.detect import version_neutral_hash, version_root

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from harvester.items import PageItem

logger = logging.getLogger(__name__)

NEAR_DUPLICATE_MODES = ("keep", "drop")
BOILERPLATE_MODES = ("once", "drop", "off")


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
    - **Versions** (``PageItem.version``): an exact copy from another version is stored once, and
      its version is added to the stored page's ``versions`` (``page_versioned`` signal), so a
      search of either version finds it. With ``HARVESTER_VERSIONS_APART``, near duplicates are
      only looked for within a version, so a version's page is never dropped for resembling
      another version's.

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
        self._threshold = threshold
        self._apart = settings.getbool("HARVESTER_VERSIONS_APART")
        if threshold > 0:
            NearDuplicates(threshold)  # checks the threshold
        # One index per version: a page nearly repeats only pages of its own version.
        self._near: dict[str | None, NearDuplicates] = {}
        self._versions: dict[str, list[str]] = {}
        self._worker = Worker("harvester-dedup", settings.getint("HARVESTER_OFFLOAD_MIN_SIZE"))
        crawler.signals.connect(self._worker.close, signal=signals.spider_closed)
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

    @staticmethod
    def _content_key(item: PageItem) -> str:
        """What makes two pages exact copies: their content hash, or, for a page of a docs version
        whose URL names it, its text with its version's folder left out of its links (the same
        page in 4.2 and 5.0 links into /4.2/ and /5.0/)."""
        root = version_root(item.url) if item.version else None
        return item.content_hash if root is None else version_neutral_hash(item.markdown, root)

    def _unchanged_original(self, item: PageItem) -> str | None:
        """The stored page with this content that a re-crawl reached without fetching it (304)."""
        recrawl = self._crawler.get_extension(Recrawl)
        original = recrawl.unchanged_hashes.get(item.content_hash) if recrawl is not None else None
        return original if original != item.url else None

    async def process_item(self, item: PageItem) -> PageItem:
        if item.url in self._urls:
            return self._duplicate(item, item.url, "same_url")
        content = self._content_key(item)
        first = self._hashes.get(content) or self._hashes.get(item.content_hash) or self._unchanged_original(item)
        if first is not None:
            return self._duplicate(item, first, "same_content")
        # Claimed before the MinHash is computed off the reactor, so a copy arriving meanwhile is
        # an exact duplicate of this page.
        self._urls.add(item.url)
        self._hashes[content] = item.url
        for alias in item.aliases:
            self._add_alias(item.url, alias)
        if item.version:
            self._versions[item.url] = list(item.versions or [item.version])
        if self._threshold > 0:
            await self._check_near(item, content)
        self._in_flight[item.url] = item
        self._stats.inc_value("harvester/dedup/unique")
        return item

    async def _check_near(self, item: PageItem, content: str) -> None:
        """``content``: the page's exact-copy key (``_content_key``)."""
        version = item.version if self._apart else None
        near = self._near.get(version)
        if near is None:
            near = self._near[version] = NearDuplicates(self._threshold)
        minhash, cpu_ms = await self._worker.run_sized(len(item.markdown), timed_call, signature, item.markdown,
                                                       shingle_size=self._shingle, num_perm=near.num_perm)
        self._stats.inc_value(stat_key("dedup"), cpu_ms)
        match = near.match(minhash)
        if match is None:
            near.add(item.url, minhash)
            return
        original, similarity = match
        self._stats.inc_value("harvester/dedup/near_duplicates")
        self.crawler.signals.send_catch_log(
            page_near_duplicate, url=item.url, original=original, similarity=round(similarity, 3)
        )
        if self._near_mode == "drop":
            # Later exact copies of this page are copies of its original, which is what is stored.
            self._urls.discard(item.url)
            self._hashes[content] = original
            raise NearDuplicatePage(
                f"{similarity:.0%} similar to {original}: {item.url}", log_level="INFO"
            )
        item.near_duplicate_of = original

    def _duplicate(self, item: PageItem, first: str, kind: str) -> PageItem:
        self._stats.inc_value(f"harvester/dedup/{kind}")
        if item.version:
            self._add_version(first, item.version)
        for alias in (item.url, *item.aliases):
            self._add_alias(first, alias, copy=kind == "same_content")
        if self._feed_duplicates and item.url != first:
            item.duplicate_of = first
            item.chunks = []
            return item
        if kind == "same_url":
            raise DuplicatePage(f"URL already stored: {item.url}", log_level="DEBUG")
        raise DuplicatePage(f"same content as {first}: {item.requested_url or item.url}", log_level="INFO")

    def _add_version(self, url: str, version: str) -> None:
        """The stored page ``url`` is also ``version``'s copy."""
        versions = self._versions.setdefault(url, [])
        if version in versions:
            return
        versions.append(version)
        self._stats.inc_value("harvester/dedup/shared_with_version")
        stored = self._in_flight.get(url)
        if stored is not None and version not in stored.versions:
            stored.versions.append(version)
        self.crawler.signals.send_catch_log(page_versioned, url=url, version=version)

    def _add_alias(self, url: str, alias: str, *, copy: bool = False) -> None:
        """``copy``: ``alias`` served a copy of the page's content (not merely another URL of it)."""
        if alias == url or alias in self.aliases[url]:
            return
        self.aliases[url].append(alias)
        self._stats.inc_value("harvester/dedup/aliases")
        stored = self._in_flight.get(url)
        if stored is not None and alias not in stored.aliases:
            stored.aliases.append(alias)
        self.crawler.signals.send_catch_log(page_aliased, url=url, alias=alias, copy=copy)


class BoilerplatePipeline:
    """Between chunking and embedding: recognise boilerplate chunks and store each text once.

    A chunk text is boilerplate once it has been seen on at least ``HARVESTER_BOILERPLATE_MIN_PAGES``
    pages and on more than ``HARVESTER_BOILERPLATE_SHARE`` of the pages seen so far (running
    counts: pages stream through, see ``BoilerplateCounter``). From then on:

    - mode ``once``: the first page that carries it after the decision keeps it as a chunk with a
      point id made from its text alone (``boilerplate_point_id``), no page context line and
      ``boilerplate: true``; every later copy is removed from its page before embedding;
    - mode ``drop``: every copy is removed;
    - mode ``off``: this pipeline is off.

    The copies stored as ordinary chunks before the decision (at most ``MIN_PAGES - 1`` pages, more
    when the share was not yet reached) stay in those pages' feed lines; their points are deleted
    by the index when the crawl closes (``chunks_superseded`` signal).

    Stats: ``harvester/boilerplate/texts`` (texts stored once), ``harvester/boilerplate/chunks``
    (chunk copies recognised as boilerplate), ``harvester/boilerplate/embeddings_saved`` (copies
    not embedded), ``harvester/boilerplate/earlier_copies`` (copies stored before the decision,
    deleted at close).
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self._mode = settings.get("HARVESTER_BOILERPLATE_MODE")
        if self._mode not in BOILERPLATE_MODES:
            raise NotConfigured(f"HARVESTER_BOILERPLATE_MODE must be one of {BOILERPLATE_MODES}")
        if self._mode == "off" or not settings.getbool("HARVESTER_CHUNKING_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self._stats = crawler.stats
        self._share = settings.getfloat("HARVESTER_BOILERPLATE_SHARE")
        self._min_pages = settings.getint("HARVESTER_BOILERPLATE_MIN_PAGES")
        BoilerplateCounter(self._share, self._min_pages)  # checks the settings
        self._apart = settings.getbool("HARVESTER_VERSIONS_APART")
        # With HARVESTER_VERSIONS_APART, counted per docs version: a text on every version's copy of a page is not boilerplate.
        self._counters: dict[str | None, BoilerplateCounter] = {}
        self._stored: set[tuple[str | None, int]] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_item(self, item: PageItem) -> PageItem:
        if item.duplicate_of or not item.chunks:
            return item
        keys = [text_key(chunk["text"]) for chunk in item.chunks]
        version = item.version if self._apart else None
        counter = self._counters.get(version)
        if counter is None:
            counter = self._counters[version] = BoilerplateCounter(self._share, self._min_pages)
        counter.observe(keys)
        kept = []
        for chunk, key in zip(item.chunks, keys, strict=True):
            if not counter.is_boilerplate(key):
                counter.remember(key, chunk["id"])
                kept.append(chunk)
                continue
            self._stats.inc_value("harvester/boilerplate/chunks")
            earlier = counter.earlier(key)
            if earlier:
                self._stats.inc_value("harvester/boilerplate/earlier_copies", len(earlier))
                self.crawler.signals.send_catch_log(chunks_superseded, ids=earlier)
            if self._mode == "once" and (version, key) not in self._stored:
                self._stored.add((version, key))
                self._stats.inc_value("harvester/boilerplate/texts")
                logger.info("Boilerplate chunk, stored once (first on %s): %.60r", item.url, chunk["text"])
                # Page-independent: no title or heading path in front, an id from the text alone.
                kept.append({**chunk, "id": boilerplate_point_id(chunk["text"], version), "context": "",
                             "boilerplate": True})
            else:
                self._stats.inc_value("harvester/boilerplate/embeddings_saved")
        item.chunks = kept
        return item


class AggregatePipeline:
    """After dedup, before chunking: recognise aggregate pages (a print-all page, a single-page
    edition, a tag page inlining its posts: ``harvester.dedup.aggregate``) and keep them out of the
    index, whichever order the pages arrive in, without losing a passage of text.

    They are not stored rather than stored and filtered out at query time: they would cost as much
    embedding as the pages they repeat, and every reader of the collection (LangChain, LlamaIndex,
    an MCP client) would have to know to filter them out.

    - An aggregate recognised on arrival (the pages it repeats came first) keeps only its own
      passages (those no kept page holds); with none, it is dropped (``AggregatePage``): never
      chunked, embedded or stored, no feed line.
    - An earlier page recognised later (it came first; the pages it repeats followed) was already
      stored: the ``page_aggregate`` signal makes the index delete its points when the crawl closes,
      all but the chunks holding a passage of its own (its feed line stays), and the run report
      lists it under ``aggregate_page_removed``.
    - A page that stands for copies of itself (exact copies aliased to it, near duplicates of it) is
      never an aggregate: the copies were not stored.

    Every decision sends ``page_aggregate`` with the kept pages that hold the page's text, which
    the run report lists. Settings: ``HARVESTER_AGGREGATE_SHARE`` (0 = off). Stats:
    ``harvester/aggregate/dropped``, ``harvester/aggregate/trimmed`` (kept with its own passages
    only), ``harvester/aggregate/removed`` and, through CoreStats,
    ``item_dropped_reasons_count/AggregatePage``.
    """

    def __init__(self, crawler: Crawler) -> None:
        share = crawler.settings.getfloat("HARVESTER_AGGREGATE_SHARE")
        if share <= 0:
            raise NotConfigured
        self.crawler = crawler
        self._stats = crawler.stats
        self._share = share
        self._apart = crawler.settings.getbool("HARVESTER_VERSIONS_APART")
        # With HARVESTER_VERSIONS_APART, one detector per docs version: a version's page is never an aggregate of other versions' pages.
        self._detectors: dict[str | None, AggregateDetector] = {}
        self._worker = Worker("harvester-aggregate", crawler.settings.getint("HARVESTER_OFFLOAD_MIN_SIZE"))
        crawler.signals.connect(self._worker.close, signal=signals.spider_closed)
        crawler.signals.connect(self._stands_for_copy, signal=page_aliased)
        crawler.signals.connect(self._stands_for_near_copy, signal=page_near_duplicate)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _stands_for_copy(self, url: str, alias: str, **kwargs: object) -> None:
        if kwargs.get("copy"):
            for detector in self._detectors.values():
                detector.exempt(url)

    def _stands_for_near_copy(self, url: str, original: str, **kwargs: object) -> None:
        for detector in self._detectors.values():
            detector.exempt(original)

    async def process_item(self, item: PageItem) -> PageItem:
        if item.duplicate_of or not item.markdown:
            return item
        (shingles, texts, keys), cpu_ms = await self._worker.run_sized(
            len(item.markdown), timed_call, page_fingerprint, item.markdown)
        self._stats.inc_value(stat_key("dedup"), cpu_ms)
        version = item.version if self._apart else None
        detector = self._detectors.get(version)
        if detector is None:
            detector = self._detectors[version] = AggregateDetector(self._share)
        with cpu_stage(self._stats, "dedup"):
            aggregates = detector.add(item.url, shingles, keys)
        for url in aggregates:
            covered, largest = detector.figures(url) or (0.0, 0.0)
            held_by = detector.holders(url)
            if url == item.url:
                own = detector.own_passages(url, texts)
                self.crawler.signals.send_catch_log(page_aggregate, url=url, held_by=held_by, stored=False,
                                                    own_passages=len(own))
                if not own:
                    self._stats.inc_value("harvester/aggregate/dropped")
                    raise AggregatePage(
                        f"aggregate page ({covered:.0%} of its text is on other pages, at most "
                        f"{largest:.0%} on any one): {url}", log_level="INFO",
                    )
                self._stats.inc_value("harvester/aggregate/trimmed")
                logger.info("Aggregate page, only its %d passages of its own kept (%.0f%% of its text is on "
                            "other pages, at most %.0f%% on any one): %s", len(own), covered * 100,
                            largest * 100, url)
                item.markdown = "\n\n".join(own)
                continue
            self._stats.inc_value("harvester/aggregate/removed")
            logger.info("Aggregate page, removed from the index but for its own passages (%.0f%% of its text "
                        "is on pages crawled after it, at most %.0f%% on any one): %s",
                        covered * 100, largest * 100, url)
            self.crawler.signals.send_catch_log(page_aggregate, url=url, held_by=held_by, stored=True,
                                                keep=functools.partial(_holds_own_passage, detector, url))
            self.crawler.signals.send_catch_log(page_skipped, url=url, reason="aggregate_page_removed")
        return item


def _holds_own_passage(detector: AggregateDetector, url: str, text: str) -> bool:
    """Whether a stored chunk of the aggregate ``url`` holds a passage no kept page holds."""
    return bool(detector.own_passages(url, passages(text), cut=True))


def page_fingerprint(markdown: str) -> tuple[set[int], list[str], list[int | None]]:
    """What the aggregate detector counts of a page: its sampled shingles, its passages and their keys."""
    texts = passages(markdown)
    return sampled_shingles(markdown), texts, [passage_key(text) for text in texts]
