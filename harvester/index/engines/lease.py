"""Turn-taking between processes over one embedded store folder.

Qdrant's in-process engine locks its folder for as long as a process has it open, so a crawl
writing and a search (or an MCP server) reading would fail on each other. Instead each process
holds the folder only while it uses it: ``<name>.lock`` is held (flock) while the shard is open,
a process that wants it holds ``<name>.want`` while it waits, and the holder gives the shard up
at its next idle moment when it sees someone waiting. A process killed while holding either lock
loses it with its file descriptors, so nothing is left stale.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

POLL = 0.02


class LeaseTimeout(TimeoutError):
    """The folder stayed held by another process for the whole wait."""


class Lease:
    """An exclusive, cross-process hold on ``base``'s folder (``base.lock`` / ``base.want``)."""

    def __init__(self, base: Path, timeout: float) -> None:
        self._lock_path = base.with_name(base.name + ".lock")
        self._want_path = base.with_name(base.name + ".want")
        self.timeout = timeout
        self._lock_fd: int | None = None

    @property
    def held(self) -> bool:
        return self._lock_fd is not None

    def acquire(self) -> None:
        """Hold the folder, waiting (while flagged as waiting) up to ``timeout`` seconds."""
        if self._lock_fd is not None:
            return
        self._lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        if _try(lock, fcntl.LOCK_EX):
            self._lock_fd = lock
            return
        want = os.open(self._want_path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        try:
            # One waiter at a time holds the flag; the holder sees it and lets go.
            while not _try(want, fcntl.LOCK_EX):
                _wait(deadline, lock, self._lock_path)
            while not _try(lock, fcntl.LOCK_EX):
                _wait(deadline, lock, self._lock_path)
            self._lock_fd = lock
        finally:
            os.close(want)  # closing drops the flag

    def contended(self) -> bool:
        """Whether another process is waiting for the folder."""
        if self._lock_fd is None:
            return False
        try:
            want = os.open(self._want_path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            if _try(want, fcntl.LOCK_SH):
                fcntl.flock(want, fcntl.LOCK_UN)
                return False
            return True
        finally:
            os.close(want)

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


def _try(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _wait(deadline: float, lock: int, path: Path) -> None:
    if time.monotonic() >= deadline:
        os.close(lock)
        raise LeaseTimeout(f"{path.parent} stayed in use by another process (a crawl or a server)")
    time.sleep(POLL)
