"""Store a chunk repeated across the crawl's pages (a warning box, a footer paragraph) once."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from harvester.dedup.detect import BoilerplateCounter, text_key
from harvester.index.store import boilerplate_point_id
from harvester.signals import chunks_superseded

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from harvester.items import PageItem

logger = logging.getLogger(__name__)

BOILERPLATE_MODES = ("once", "drop", "off")


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
        self._counter = BoilerplateCounter(
            settings.getfloat("HARVESTER_BOILERPLATE_SHARE"), settings.getint("HARVESTER_BOILERPLATE_MIN_PAGES")
        )
        self._stored: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_item(self, item: PageItem) -> PageItem:
        if item.duplicate_of or not item.chunks:
            return item
        keys = [text_key(chunk["text"]) for chunk in item.chunks]
        self._counter.observe(keys)
        kept = []
        for chunk, key in zip(item.chunks, keys, strict=True):
            if not self._counter.is_boilerplate(key):
                self._counter.remember(key, chunk["id"])
                kept.append(chunk)
                continue
            self._stats.inc_value("harvester/boilerplate/chunks")
            earlier = self._counter.earlier(key)
            if earlier:
                self._stats.inc_value("harvester/boilerplate/earlier_copies", len(earlier))
                self.crawler.signals.send_catch_log(chunks_superseded, ids=earlier)
            if self._mode == "once" and key not in self._stored:
                self._stored.add(key)
                self._stats.inc_value("harvester/boilerplate/texts")
                logger.info("Boilerplate chunk, stored once (first on %s): %.60r", item.url, chunk["text"])
                # Page-independent: no title or heading path in front, an id from the text alone.
                kept.append({**chunk, "id": boilerplate_point_id(chunk["text"]), "context": "",
                             "boilerplate": True})
            else:
                self._stats.inc_value("harvester/boilerplate/embeddings_saved")
        item.chunks = kept
        return item
