"""A one-thread worker for blocking work that must not hold up the reactor thread for long.

``scrapy.utils.asyncio.run_in_thread`` uses the shared default executor, where calls run
concurrently. The tokenizer, the model and embedded Qdrant are not safe to call from several
threads at once, so each pipeline owns one of these and its calls run in order.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

# OpenBLAS's worker threads spin for 2**28 cycles after each call, wasted on a crawl's few small
# BLAS calls; 2**16 cycles still keeps a thread ready between back-to-back calls.
BLAS_THREAD_TIMEOUT = "16"


def quiet_blas_threads() -> bool:
    """Shorten OpenBLAS's spinning (``OPENBLAS_THREAD_TIMEOUT``) for this process and its children.
    OpenBLAS reads the variable once, as NumPy loads it: whether it was set in time (False where
    the environment already sets it, or NumPy is already loaded)."""
    if "OPENBLAS_THREAD_TIMEOUT" in os.environ or "numpy" in sys.modules:
        return False
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = BLAS_THREAD_TIMEOUT
    return True


def _read_outcome(future: asyncio.Future[Any]) -> None:
    """Read a waited-on copy of a worker call's failure, so that asyncio does not log it as never
    retrieved: the call's own caller gets and handles the original."""
    if not future.cancelled():
        future.exception()


class Worker:
    """Runs callables one at a time in its own thread; ``await worker.run(fn, *args)``.

    ``await worker.run_sized(size, fn, *args)`` runs small work (``size`` under ``inline_below``:
    bytes of a page, characters of a text) in the calling thread instead, as Scrapy runs its
    callbacks, once the worker has nothing left to do. Pure-Python work holds the interpreter lock
    throughout, so a thread beside the reactor adds no speed for it, only lock hand-offs. Large
    work still goes to the thread, so that one long page does not stall downloads and the browser.
    Small work that arrives meanwhile waits for it and then runs here, rather than queueing every
    page behind the long one in the thread. The thread starts with the first call it gets.
    """

    def __init__(self, name: str, inline_below: int = 0) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._inline_below = inline_below
        self._last: Future[Any] | None = None

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        self._last = self._executor.submit(fn, *args, **kwargs)
        return await asyncio.wrap_future(self._last)

    async def run_sized(self, size: int, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` here when ``size`` is small, once the worker's calls are done
        (they may have failed: that is their callers' business); else in the worker. Calls run one
        at a time either way: the worker's last call has finished before one runs here (its future
        is done; calls finish in order), and none starts there meanwhile (only this thread submits
        them, and nothing is awaited between the check and the call)."""
        if size >= self._inline_below:
            return await self.run(fn, *args, **kwargs)
        while self._last is not None and not self._last.done():
            waiter = asyncio.wrap_future(self._last)
            # Waited on, not awaited: being cancelled here must not cancel another caller's call.
            waiter.add_done_callback(_read_outcome)
            await asyncio.wait([waiter])
        return fn(*args, **kwargs)

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` in the worker and wait for it, blocking the caller (for shutdown steps)."""
        self._last = self._executor.submit(fn, *args, **kwargs)
        return self._last.result()

    def close(self) -> None:
        self._executor.shutdown(wait=True)
