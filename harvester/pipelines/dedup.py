"""Drop pages already stored in this crawl."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from harvester.exceptions import DuplicatePage
from harvester.extensions.recrawl import Recrawl

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from harvester.items import PageItem

logger = logging.getLogger(__name__)


class DedupPipeline:
    """Drop a page whose canonical URL or normalised content hash was already seen in this crawl.

    Settings: ``HARVESTER_DEDUP_ENABLED``. Stats: ``harvester/dedup/unique``,
    ``harvester/dedup/same_url``, ``harvester/dedup/same_content`` and, through CoreStats,
    ``item_dropped_reasons_count/DuplicatePage``.
    """

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HARVESTER_DEDUP_ENABLED"):
            raise NotConfigured
        self._stats = crawler.stats
        self._crawler = crawler
        self._urls: set[str] = set()
        self._hashes: dict[str, str] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _unchanged_original(self, item: PageItem) -> str | None:
        """The stored page with this content that a re-crawl reached without fetching it (304)."""
        recrawl = self._crawler.get_extension(Recrawl)
        original = recrawl.unchanged_hashes.get(item.content_hash) if recrawl is not None else None
        return original if original != item.url else None

    def process_item(self, item: PageItem) -> PageItem:
        if item.url in self._urls:
            self._stats.inc_value("harvester/dedup/same_url")
            raise DuplicatePage(f"URL already stored: {item.url}", log_level="DEBUG")
        first = self._hashes.get(item.content_hash) or self._unchanged_original(item)
        if first is not None:
            self._stats.inc_value("harvester/dedup/same_content")
            raise DuplicatePage(
                f"same content as {first}: {item.requested_url or item.url}", log_level="INFO"
            )
        self._urls.add(item.url)
        self._hashes[item.content_hash] = item.url
        self._stats.inc_value("harvester/dedup/unique")
        return item
