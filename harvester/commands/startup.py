"""What Harvester's commands do to their own process, called by each command as it starts its work
(never as a side effect of importing a module: a script that imports Harvester keeps its process
as it set it up).

``tune_process`` for every command that loads the model or the store; ``prepare_crawl`` and
``leave_to_exit`` around the crawl of ``scrapy crawl``.
"""

from __future__ import annotations

import gc
import inspect
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING

from scrapy import signals

from harvester.memory import raise_young_gc_threshold
from harvester.threads import quiet_blas_threads

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType

    from scrapy import Spider
    from scrapy.crawler import Crawler


def tune_process() -> None:
    """Before anything imports NumPy: OpenBLAS's spinning shortened (``harvester.threads``), and the
    youngest generation collected less often (``harvester.memory``)."""
    quiet_blas_threads()
    raise_young_gc_threshold()


def prepare_crawl(crawler: Crawler) -> None:
    """Once ``crawler`` exists and before it crawls: Scrapy's HTTP handler imported cheaply, and
    what start-up built frozen once the spider opens."""
    _import_http_handler()
    # Start-up's objects (modules, classes, Scrapy's components: most of those alive in a crawl)
    # live as long as the process: frozen, they are no longer walked by every full collection.
    # The few objects of garbage alive at that moment stay; the crawl's own garbage is collected.
    crawler.signals.connect(_freeze_start_up, signal=signals.spider_opened, weak=False)


def leave_to_exit() -> None:
    """After the crawl, as the process ends: the interpreter's last collections would walk every
    object the crawl left alive only to free memory the exit frees anyway; frozen, they are left to
    the exit. Nothing that matters is skipped: the feed, the index, the browser and the workers are
    closed when the spider closes, and atexit handlers still run."""
    gc.freeze()


def _freeze_start_up(spider: Spider) -> None:
    gc.freeze()


def _import_http_handler() -> None:
    """Import Scrapy's HTTP/1.1 download handler (which scrapy-playwright's handler imports too)
    before the engine starts, with ``inspect.stack()`` made cheap while it loads. Its modules define
    three of Scrapy's deprecated-class aliases, and each calls ``inspect.stack()`` only to name the
    module that defines it. The real one reads every frame's source and, for each frame without a
    file (the import machinery's), scans all of ``sys.modules`` (python/cpython#92041)."""
    with _stack_without_source():
        import scrapy.core.downloader.handlers.http11  # noqa: F401


@contextmanager
def _stack_without_source() -> Iterator[None]:
    """``inspect.stack()`` listing the frames without reading their source files (what
    ``context=0`` cannot skip: it still looks up each frame's module), for a block of start-up code
    that runs in one thread."""
    original = inspect.stack

    def stack(context: int = 1) -> list[inspect.FrameInfo]:
        frames = []
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            code = frame.f_code
            frames.append(inspect.FrameInfo(frame, code.co_filename, frame.f_lineno, code.co_name, None, None,
                                            positions=None))
            frame = frame.f_back
        return frames

    inspect.stack = stack
    try:
        yield
    finally:
        inspect.stack = original
