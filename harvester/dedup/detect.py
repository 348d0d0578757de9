"""Recognising repeated content: near-duplicate pages (MinHash + LSH), repeated chunk texts
(boilerplate) and versioned copies of a docs site. Scrapy-free.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING

from harvester.dedup.compact import CompactIntMap
from harvester.versions.detect import pattern_version

if TYPE_CHECKING:
    import numpy as np

    from harvester.dedup.minhash import MinHash

_WORD = re.compile(r"\w+")
VERSION_KEEP_FIRST = "first"


def shingles(text: str, size: int) -> set[str]:
    """The word ``size``-grams of ``text``, case-folded (the whole text when it is shorter)."""
    words = _WORD.findall(text.casefold())
    if len(words) <= size:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i:i + size]) for i in range(len(words) - size + 1)}


def signature(markdown: str, *, shingle_size: int = 5, num_perm: int = 128) -> MinHash:
    """The MinHash of ``markdown``'s case-folded word shingles (the whole text when it is shorter),
    link targets left out (``markdown_word_hashes``), each shingle hashed by ``shingle_hashes``."""
    from harvester.dedup.minhash import MinHash
    from harvester.dedup.shingles import markdown_word_hashes, shingle_hashes

    hashes = markdown_word_hashes(markdown)
    return MinHash.of(shingle_hashes(hashes, min(shingle_size, len(hashes)) or 1), num_perm)


class NearDuplicates:
    """Pages whose estimated shingle Jaccard similarity to an earlier page is at least
    ``threshold``. LSH bands find the candidates; the MinHash estimate of each decides, and the
    most similar earlier page is the one reported. Only pages that were not near-duplicates
    themselves are indexed, so every near-duplicate points at an original."""

    def __init__(self, threshold: float, *, num_perm: int = 128) -> None:
        if not 0 < threshold <= 1:
            raise ValueError(f"near-duplicate threshold must be in (0, 1], got {threshold!r}")
        from harvester.dedup.minhash import MinHashIndex

        self.threshold = threshold
        self.num_perm = num_perm
        self._index = MinHashIndex(threshold, num_perm)
        # Every indexed page's signature is kept for the crawl: its minima's low 16 bits (b-bit
        # minwise hashing: two different minima agree there once in 65,536, a bias the threshold
        # never sees), in blocks of rows rather than an array object a page.
        self._rows: dict[str, int] = {}
        self._blocks: list[np.ndarray] = []

    def match(self, minhash: MinHash) -> tuple[str, float] | None:
        """The most similar earlier page at or above the threshold, with its similarity."""
        import numpy as np

        best: tuple[str, float] | None = None
        values = _low_bits(minhash)
        for key in self._index.query(minhash):
            row = self._rows[key]
            kept = self._blocks[row // _BLOCK_ROWS][row % _BLOCK_ROWS]
            similarity = float(np.count_nonzero(kept == values)) / self.num_perm
            if similarity >= self.threshold and (best is None or similarity > best[1]):
                best = (key, similarity)
        return best

    def add(self, key: str, minhash: MinHash) -> None:
        import numpy as np

        if key in self._rows:
            return
        if len(minhash.values) != self.num_perm:
            raise ValueError("signatures of different sizes cannot be compared")
        self._index.insert(key, minhash)
        row = self._rows[key] = len(self._rows)
        if row % _BLOCK_ROWS == 0:
            self._blocks.append(np.empty((_BLOCK_ROWS, self.num_perm), dtype=np.uint16))
        self._blocks[-1][row % _BLOCK_ROWS] = _low_bits(minhash)


_BLOCK_ROWS = 256


def _low_bits(minhash: MinHash) -> np.ndarray:
    import numpy as np

    return minhash.values.astype(np.uint16)


def text_key(text: str) -> int:
    """Identity of a chunk text: whitespace collapsed, so reflowed copies count as one. 64 bits of
    its SHA-256, an int: every chunk text of a crawl is counted, and a hex string costs three times more."""
    return int.from_bytes(hashlib.sha256(" ".join(text.split()).encode("utf-8")).digest()[:8], "big")


def _compact_id(chunk_id: str) -> int | str:
    """A point id as kept for later: a UUID's 128 bits as an int (half the memory of its string)."""
    try:
        number = uuid.UUID(chunk_id).int
    except ValueError:
        return chunk_id
    return number if str(uuid.UUID(int=number)) == chunk_id else chunk_id


def _expand_id(kept: int | str) -> str:
    return str(uuid.UUID(int=kept)) if isinstance(kept, int) else kept


class BoilerplateCounter:
    """Decides, as pages arrive, which chunk texts are boilerplate.

    A text is boilerplate once it has been seen on at least ``min_pages`` pages and on more than
    ``share`` of the pages seen so far. The decision is made on running counts because pages
    stream through the pipelines; once made it holds for the rest of the crawl (a text is not
    un-decided when later pages lower its share). The pages that carried it before the decision
    are known (``earlier``), so their copies can be removed.
    """

    def __init__(self, share: float, min_pages: int) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"boilerplate share must be in (0, 1], got {share!r}")
        if min_pages < 2:
            raise ValueError(f"boilerplate minimum page count must be at least 2, got {min_pages!r}")
        self.share = share
        self.min_pages = min_pages
        self.pages = 0
        # Every chunk text of the crawl is counted: in numpy arrays, not dicts of ints.
        self._counts = CompactIntMap(value_bits=32)
        # Most texts are on one page: their one earlier chunk id is kept bare (128 bits), not in a list.
        self._before = CompactIntMap(value_bits=128)
        self.decided: set[Hashable] = set()

    def observe(self, keys: Iterable[Hashable]) -> None:
        """Count one page carrying ``keys`` (its chunk text keys; repeats on a page count once)."""
        self.pages += 1
        counts, unique = self._counts, list(set(keys))
        for key, count in zip(unique, counts.get_many(unique, 0), strict=True):
            counts[key] = count + 1

    def is_boilerplate(self, key: Hashable) -> bool:
        """Whether ``key`` is (now) boilerplate; a decision made once holds."""
        if key in self.decided:
            return True
        count = self._counts.get(key, 0)
        if count >= self.min_pages and count / self.pages > self.share:
            self.decided.add(key)
            return True
        return False

    def remember(self, key: Hashable, chunk_id: str) -> None:
        """A copy of undecided ``key`` stored as an ordinary chunk under ``chunk_id``."""
        kept = _compact_id(chunk_id)
        before = self._before.get(key)
        if before is None:
            self._before[key] = kept
        elif isinstance(before, list):
            before.append(kept)
        else:
            self._before[key] = [before, kept]

    def earlier(self, key: Hashable) -> list[str]:
        """The chunk ids of the copies stored before ``key`` was decided; forgets them."""
        before = self._before.pop(key, [])
        return [_expand_id(kept) for kept in (before if isinstance(before, list) else [before])]


class VersionRule:
    """Crawl one version of versioned docs (``/en/1.2/`` against ``/en/1.3/``).

    ``pattern`` finds the version in a URL (its named group ``version``, else its first group, else
    the whole match); ``keep`` is the version to crawl, or ``first`` for the first version seen
    (the start URL's, when it has one). URLs without a version are always allowed.
    """

    def __init__(self, pattern: str | None, keep: str | None = VERSION_KEEP_FIRST) -> None:
        try:
            self._pattern = re.compile(pattern) if pattern else None
        except re.error as exc:
            raise ValueError(f"invalid version pattern {pattern!r}: {exc}") from exc
        self._keep = None if (keep or VERSION_KEEP_FIRST) == VERSION_KEEP_FIRST else keep

    def version(self, url: str) -> str | None:
        return pattern_version(self._pattern, url) if self._pattern is not None else None

    def allows(self, url: str) -> bool:
        version = self.version(url)
        if version is None:
            return True
        if self._keep is None:
            self._keep = version
        return version == self._keep
