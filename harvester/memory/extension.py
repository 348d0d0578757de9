"""Tunes the process's allocator when a crawler is built (``harvester.memory``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from harvester.embedding.models import settings_backend
from harvester.memory import MMAP_THRESHOLD, tune_malloc

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class MallocTuning:
    """Extension: glibc malloc limited to two arenas, blocks of 4 MiB or more given back to the
    system when freed, and at most 16 MiB kept free at the heap's top, before the crawl's threads
    start. With the torch model in this process (embedding on, ``HARVESTER_EMBEDDING_PROCESS``
    off, the backend torch) only the arenas are limited: the fixed threshold slows torch down
    (``harvester.memory.tune_malloc``); the embedding pipeline trims the heaps after each call of
    the model instead. ONNX Runtime keeps its tensors in an arena of its own, whose speed the
    threshold does not change.

    Settings: ``HARVESTER_MALLOC_TUNING``. The ``MALLOC_ARENA_MAX``, ``MALLOC_MMAP_THRESHOLD_`` and
    ``MALLOC_TRIM_THRESHOLD_`` environment variables, when set, win.
    """

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HARVESTER_MALLOC_TUNING"):
            raise NotConfigured
        settings = crawler.settings
        torch_here = (settings.getbool("HARVESTER_EMBEDDING_ENABLED")
                      and not settings.getbool("HARVESTER_EMBEDDING_PROCESS")
                      and settings_backend(settings) == "torch")
        self.applied = tune_malloc(mmap_threshold=None if torch_here else MMAP_THRESHOLD)
        logger.debug("malloc tuned: %s", ", ".join(self.applied) or "nothing (not glibc, or set by the environment)")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)
