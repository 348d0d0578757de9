"""Tunes the process's allocator when a crawler is built (``harvester.memory``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from harvester.memory import tune_malloc

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

logger = logging.getLogger(__name__)


class MallocTuning:
    """Extension: glibc malloc limited to two arenas, and blocks of 1 MiB or more given back to the
    system when freed, before the crawl's threads start.

    Settings: ``HARVESTER_MALLOC_TUNING``. The ``MALLOC_ARENA_MAX``, ``MALLOC_MMAP_THRESHOLD_`` and
    ``MALLOC_TRIM_THRESHOLD_`` environment variables, when set, win.
    """

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HARVESTER_MALLOC_TUNING"):
            raise NotConfigured
        applied = tune_malloc()
        logger.debug("malloc tuned: %s", ", ".join(applied) or "nothing (not glibc, or set by the environment)")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)
