"""The allocator settings of a long crawl, and how often its garbage collector runs (Scrapy-free).

A crawl allocates and frees large blocks all the time (response bodies, parsed trees, the text of
a long page), from several threads. glibc's malloc keeps what is freed for reuse: in one arena per
thread (up to eight per core), and, for large blocks, in the heap once its dynamic mmap threshold
has grown past them. The process's resident memory then keeps the high-water mark of every large
page it met. Two arenas and fixed thresholds bound it: blocks from 4 MiB on are mapped apart and
given back when freed, and the heap keeps at most 16 MiB free at its top. A lower threshold
would make every mid-sized block (the text of a long page, its shingle arrays) a fresh mapping,
zeroed page by page, for little memory saved.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import logging
import os
from typing import Any

logger = logging.getLogger(__name__)

# glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
ARENA_MAX = 2
MMAP_THRESHOLD = 4 * 1024 * 1024
TRIM_THRESHOLD = 16 * 1024 * 1024

# The interpreter's youngest generation is collected every this many net allocations of container
# objects (700 by default): a crawl allocates millions, nearly all freed by reference counting
# soon after, so frequent collections only walk live objects. Cycles wait a little longer.
YOUNG_GC_THRESHOLD = 10_000

# The environment variables glibc reads for the same parameters: a user's own choice wins.
_ENVIRONMENT = {M_ARENA_MAX: "MALLOC_ARENA_MAX", M_MMAP_THRESHOLD: "MALLOC_MMAP_THRESHOLD_",
                M_TRIM_THRESHOLD: "MALLOC_TRIM_THRESHOLD_"}


def tune_malloc(arena_max: int = ARENA_MAX, mmap_threshold: int | None = MMAP_THRESHOLD,
                trim_threshold: int = TRIM_THRESHOLD) -> list[str]:
    """Apply the settings above to this process's glibc malloc; the names of those applied (none
    on another C library, or where the environment sets them). ``mmap_threshold`` None keeps
    glibc's own (dynamic) thresholds: a model running in the process allocates and frees tens of
    MiB per layer, and a fixed threshold makes each of those a fresh mapping, zeroed page by
    page, which slows the model; the trim threshold is then glibc's too (setting either fixes
    both)."""
    libc = _glibc()
    if libc is None:
        return []
    applied = []
    wanted = [(M_ARENA_MAX, arena_max)]
    if mmap_threshold is not None:
        wanted += [(M_MMAP_THRESHOLD, mmap_threshold), (M_TRIM_THRESHOLD, trim_threshold)]
    for param, value in wanted:
        variable = _ENVIRONMENT[param]
        if os.environ.get(variable):
            continue
        if libc.mallopt(ctypes.c_int(param), ctypes.c_int(value)) == 1:
            applied.append(variable)
    return applied


def raise_young_gc_threshold(threshold: int = YOUNG_GC_THRESHOLD) -> bool:
    """Collect the youngest generation every ``threshold`` allocations, where it is collected more
    often; the older generations keep their own thresholds. False when the threshold was already
    that high (the interpreter's default raised by the user, or this called before)."""
    young, *older = gc.get_threshold()
    if young == 0 or young >= threshold:  # 0: the collector is off, as someone wanted
        return False
    gc.set_threshold(threshold, *older)
    return True


def trim_malloc() -> bool:
    """Give the free memory of glibc's heaps back to the system (``malloc_trim(0)``); False
    where there is no glibc."""
    libc = _glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False


@functools.cache
def _glibc() -> Any:
    """This process's C library when it is glibc, else None. Looked up once: find_library runs
    ldconfig, and libc_ver reads the interpreter's binary."""
    import platform

    if platform.libc_ver()[0] != "glibc":
        return None
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None
