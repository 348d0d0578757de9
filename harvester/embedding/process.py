"""The embedding model in a child process of its own (``HARVESTER_EMBEDDING_PROCESS``).

Why a process: torch and ONNX Runtime release the GIL inside each operation and must take it
back between operations. When the crawler's reactor thread is busy with pure-Python work
(extraction, chunking, embedded Qdrant), every hand-back waits for the interpreter's switch
interval, so beside a thread that extracts pages without pause the model slows down several
times. A child process has an interpreter to itself; only texts go in and float32 rows come out.
In a crawl of docs pages extraction is a small share of the work and the thread is as fast, so
this is off by default.

``concurrent.futures.ProcessPoolExecutor`` with one worker does the process management. The
``spawn`` start method is used because forking a process that already runs Twisted, torch and
Qdrant's threads is unsafe.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

logger = logging.getLogger(__name__)

# The child's model, loaded by _load_in_child; one per child process.
_CHILD_EMBEDDER: Any = None


class EmbeddingProcessFailed(RuntimeError):
    """The embedding process died (killed, out of memory); it is started again for the next batch."""


class ProcessEmbedder:
    """``encode(texts, batch_size)`` in a child process that loads ``load_backend(name, **options)``.

    Calls block the calling thread (the embedding pipeline calls from its worker thread), and run
    one at a time.
    """

    def __init__(self, name: str, options: dict[str, Any]) -> None:
        self._name = name
        self._options = dict(options)
        self._pool = self._start()
        self.device = "?"

    def _start(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=1, mp_context=multiprocessing.get_context("spawn"),
            initializer=_load_in_child, initargs=(self._name, self._options),
        )

    def load(self) -> str:
        """Load the model in the child; its device. Raises ``ModelUnavailable`` from the child."""
        self.device = self._call(_describe_in_child)
        return self.device

    def encode(self, texts: Sequence[str], batch_size: int) -> Any:
        return self._call(_encode_in_child, list(texts), batch_size)

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return self._pool.submit(fn, *args).result()
        except BrokenProcessPool as exc:
            # This batch fails (its pages are reported as failed); the next one gets a new process.
            logger.error("The embedding process died (%s); starting a new one", exc)
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._start()
            raise EmbeddingProcessFailed(f"the embedding process died: {exc}") from exc

    def pids(self) -> list[int]:
        """The child's process id, once started (for tests and diagnostics)."""
        return list(getattr(self._pool, "_processes", None) or {})

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _load_in_child(name: str, options: dict[str, Any]) -> None:
    global _CHILD_EMBEDDER
    _exit_with_parent()
    from harvester.embedding.folder import ModelUnavailable
    from harvester.embedding.models import load_backend, resolve_backend

    threads = options.get("threads") or 0
    backend = resolve_backend(name, options.get("backend", "torch"), options.get("device"), options.get("onnx_cache"))
    if threads and backend == "torch":
        import torch

        torch.set_num_threads(threads)
    try:
        _CHILD_EMBEDDER = load_backend(name, **options)
    except ModelUnavailable as exc:
        # An initializer that raises breaks the pool with no message; keep it for the first call.
        _CHILD_EMBEDDER = exc


def _exit_with_parent() -> None:
    """End this process when the crawler is gone. A crawler killed with SIGKILL cannot shut the pool
    down, and the pool's queues give its worker no end-of-file (the worker holds both ends), so
    without this the model would stay in memory for good."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="harvester-parent-watch", daemon=True).start()


def _loaded() -> Any:
    if isinstance(_CHILD_EMBEDDER, Exception):
        raise _CHILD_EMBEDDER
    return _CHILD_EMBEDDER


def _describe_in_child() -> str:
    return str(_loaded().device)


def _encode_in_child(texts: list[str], batch_size: int) -> Any:
    return _loaded().encode(texts, batch_size=batch_size)
