"""Hashes of a text's word shingles, computed from one hash per word. Scrapy-free.

Near-duplicate signatures and aggregate-page detection both look at every word n-gram of every
page. Joining each n-gram's words and hashing the joined text was most of their CPU (a Python
step per word position); here each word is hashed once (CRC-32, in C) and the n-gram hashes are
combined from those with numpy.

The combination is multilinear hashing (Lemire and Kaser, "Strongly universal string hashing is
fast", 2014): ``(m0 + m1*x1 + ... + mk*xk mod 2**64) >> 32`` with random 64-bit ``m`` is strongly
universal over 32-bit ``x``, so an n-gram's hash is as good as a hash of its text. Only equality of
hashes within one crawl matters: nothing made from them is stored.
"""

from __future__ import annotations

import functools
import random
import re
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

_SEED = 0x5EED5
_WORD = re.compile(r"\w+")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")


@functools.lru_cache(maxsize=8)
def _multipliers(size: int) -> np.ndarray:
    import numpy as np

    # The standard library's generator: importing numpy.random would cost every crawl.
    rng = random.Random(_SEED + size)
    return np.array([rng.getrandbits(64) for _ in range(size + 1)], dtype=np.uint64)


@functools.lru_cache(maxsize=1)
def markdown_word_hashes(markdown: str) -> np.ndarray:
    r"""The hashes of ``markdown``'s words (``\w+``, case-folded), Markdown link targets and image
    sources left out, so that the same paragraph linked differently has the same words. Read-only.

    The last page's are remembered: near-duplicate signatures and aggregate-page detection make
    their shingles of different sizes from the same words, one pipeline after the other, and
    cutting the words was nearly half of what both cost."""
    hashes = word_hashes(markdown_words(markdown))
    hashes.flags.writeable = False
    return hashes


def markdown_words(markdown: str) -> list[str]:
    """``markdown``'s words as ``markdown_word_hashes`` counts them."""
    return _WORD.findall(_LINK_TARGET.sub("]", markdown).casefold())


def word_hashes(words: Sequence[str]) -> np.ndarray:
    """CRC-32 of each word (UTF-8), as uint64."""
    import numpy as np

    return np.fromiter(map(zlib.crc32, map(str.encode, words)), dtype=np.uint64, count=len(words))


def shingle_hashes(hashes: np.ndarray, size: int) -> np.ndarray:
    """32-bit hashes (as uint64) of the word ``size``-grams of the words whose ``word_hashes`` are
    ``hashes``, in order, repeats included; empty when there are fewer than ``size`` words."""
    import numpy as np

    if size < 1:
        raise ValueError(f"shingle size must be at least 1, got {size!r}")
    count = len(hashes) - size + 1
    if count <= 0:
        return np.empty(0, dtype=np.uint64)
    multipliers = _multipliers(size)
    combined = np.full(count, multipliers[0], dtype=np.uint64)
    for offset in range(size):
        combined += hashes[offset:offset + count] * multipliers[offset + 1]  # wraps mod 2**64
    return combined >> np.uint64(32)
