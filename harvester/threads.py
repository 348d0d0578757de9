"""A one-thread worker for blocking work that must not run on the reactor thread.

``scrapy.utils.asyncio.run_in_thread`` uses the shared default executor, where calls run
concurrently. The tokenizer, the model and embedded Qdrant are not safe to call from several
threads at once, so each pipeline owns one of these and its calls run in order.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

T = TypeVar("T")


class Worker:
    """Runs callables one at a time in its own thread; ``await worker.run(fn, *args)``."""

    def __init__(self, name: str) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        future = self._executor.submit(fn, *args, **kwargs)
        return await asyncio.wrap_future(future)

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` in the worker and wait for it, blocking the caller (for shutdown steps)."""
        return self._executor.submit(fn, *args, **kwargs).result()

    def close(self) -> None:
        self._executor.shutdown(wait=True)
