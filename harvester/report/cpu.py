"""CPU time per crawl stage, counted in the crawl's stats so every run shows where its CPU went
(``harvester/cpu_ms/<stage>``: ``parse``, ``links``, ``extraction``, ``chunking``, ``dedup``: near-duplicate signatures and aggregate pages).
What is left of the process's CPU time is fetching: Scrapy's engine, the downloader and the
middlewares, the feed. Scrapy-free.

Thread CPU time (``time.thread_time``), not wall time: a stage that runs in a worker thread is
not charged for the reactor's work meanwhile, nor for waiting on the interpreter lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

STAGES = ("parse", "links", "extraction", "chunking", "dedup")


class _Stats(Protocol):
    def inc_value(self, key: str, count: Any = 1, start: Any = 0) -> None: ...


def stat_key(stage: str) -> str:
    return f"harvester/cpu_ms/{stage}"


@contextmanager
def cpu_stage(stats: _Stats, stage: str) -> Iterator[None]:
    """Count the calling thread's CPU time inside the block under ``stage`` (reactor thread only:
    Scrapy's stats are not meant to be written from other threads; see ``timed_call``)."""
    started = time.thread_time()
    try:
        yield
    finally:
        stats.inc_value(stat_key(stage), (time.thread_time() - started) * 1000)


def timed_call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, float]:
    """``fn(*args, **kwargs)`` and the CPU milliseconds it took in the calling thread, for work
    run in a worker thread whose time is counted back on the reactor thread."""
    started = time.thread_time()
    result = fn(*args, **kwargs)
    return result, (time.thread_time() - started) * 1000
