"""MinHash signatures of a page's shingles, and the LSH bands that find similar ones. Scrapy-free.

Written here rather than taken from datasketch: importing datasketch imports SciPy (its LSH picks
its band sizes with ``scipy.integrate``), which costs every crawl more CPU than all the signatures
of a small docs site; and its MinHash calls a hash function per shingle in Python. The method is
the same (Broder's min-wise hashing; LSH bands chosen to minimise the false-positive and
false-negative areas around the threshold, as in Leskovec, Rajaraman and Ullman, "Mining of
Massive Datasets", ch. 3), on the shingle hashes of :mod:`harvester.dedup.shingles`, all in numpy.

Each permutation is a multiply-add-shift hash of the 32-bit shingle hash (Dietzfelbinger:
``(a*x + b) mod 2**64 >> 32``, strongly universal for 32-bit keys). Signatures never leave the
crawl, so nothing stored depends on these choices.
"""

from __future__ import annotations

import functools
import random
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["MinHash", "MinHashIndex", "band_layout"]

_SEED = 0x4D696E48
# Shingles hashed at once: a (shingles x permutations) array of 64-bit integers, 2 MB at 128.
_BATCH = 2048
_EMPTY = 2**32 - 1  # the value of a permutation no shingle reached


@functools.lru_cache(maxsize=4)
def _permutations(num_perm: int) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    # The standard library's generator: importing numpy.random would cost every crawl.
    rng = random.Random(_SEED + num_perm)
    multipliers = np.array([rng.getrandbits(64) | 1 for _ in range(num_perm)], dtype=np.uint64)
    offsets = np.array([rng.getrandbits(64) for _ in range(num_perm)], dtype=np.uint64)
    return multipliers, offsets


class MinHash:
    """The ``num_perm`` minima of a set of 32-bit hashes under as many random permutations."""

    __slots__ = ("values",)

    def __init__(self, values: np.ndarray) -> None:
        self.values = values

    @classmethod
    def of(cls, hashes: np.ndarray, num_perm: int = 128) -> MinHash:
        """The signature of ``hashes`` (uint64 values below 2**32; repeats change nothing)."""
        import numpy as np

        if num_perm < 1:
            raise ValueError(f"num_perm must be at least 1, got {num_perm!r}")
        multipliers, offsets = _permutations(num_perm)
        values = np.full(num_perm, _EMPTY, dtype=np.uint64)
        shift = np.uint64(32)
        # One buffer for every batch, worked on in place: no temporary array per operation.
        buffer = np.empty((min(len(hashes), _BATCH), num_perm), dtype=np.uint64)
        for start in range(0, len(hashes), _BATCH):
            batch = hashes[start:start + _BATCH, None]
            permuted = buffer[:len(batch)]
            np.multiply(batch, multipliers, out=permuted)
            permuted += offsets
            permuted >>= shift
            np.minimum(values, permuted.min(axis=0), out=values)
        return cls(values.astype(np.uint32))

    def jaccard(self, other: MinHash) -> float:
        """The estimated Jaccard similarity of the two sets: the share of equal minima."""
        import numpy as np

        if len(self.values) != len(other.values):
            raise ValueError("signatures of different sizes cannot be compared")
        return float(np.count_nonzero(self.values == other.values)) / len(self.values)


# The default threshold's layout, worked out once: its integrals over some 600 layouts would cost
# every crawl as much as a dozen pages' signatures (tests/test_dedup.py checks it still holds).
_KNOWN_LAYOUTS = {(0.9, 128): (5, 25)}


@functools.lru_cache(maxsize=16)
def band_layout(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows per band) for ``num_perm`` minima such that pairs at ``threshold`` similarity
    are found: the layout with the least false-positive area below the threshold plus
    false-negative area above it (equal weights), integrated numerically."""
    known = _KNOWN_LAYOUTS.get((threshold, num_perm))
    return known if known is not None else _best_layout(threshold, num_perm)


def _best_layout(threshold: float, num_perm: int) -> tuple[int, int]:
    import numpy as np

    trapezoid = getattr(np, "trapezoid", None) or np.trapz  # type: ignore[attr-defined]  # numpy < 2
    layouts = np.array([(bands, rows) for bands in range(1, num_perm + 1)
                        for rows in range(1, num_perm // bands + 1)], dtype=np.float64)
    bands, rows = layouts[:, :1], layouts[:, 1:]
    below = np.linspace(0.0, threshold, 201)
    above = np.linspace(threshold, 1.0, 201)
    false_positive = trapezoid(1 - (1 - below ** rows) ** bands, below, axis=1)
    false_negative = trapezoid((1 - above ** rows) ** bands, above, axis=1)
    best = int(np.argmin(0.5 * false_positive + 0.5 * false_negative))
    return int(layouts[best, 0]), int(layouts[best, 1])


class MinHashIndex:
    """Keys by their signatures' bands: ``query`` gives the keys that share at least one band with
    a signature, the candidates of similarity near ``threshold`` or above."""

    def __init__(self, threshold: float, num_perm: int = 128) -> None:
        self.bands, self.rows = band_layout(threshold, num_perm)
        # A band's hash, not its bytes, and a bare key where one page has the band (most do): a
        # crawl keeps an entry per band of every page. A hash collision only adds a candidate,
        # which its MinHash estimate then judges.
        self._tables: list[dict[int, str | list[str]]] = [{} for _ in range(self.bands)]

    def _band_keys(self, signature: MinHash) -> list[int]:
        values, rows = signature.values, self.rows
        return [hash(values[band * rows:(band + 1) * rows].tobytes()) for band in range(self.bands)]

    def insert(self, key: str, signature: MinHash) -> None:
        for table, band in zip(self._tables, self._band_keys(signature)):
            keys = table.get(band)
            if keys is None:
                table[band] = key
            elif isinstance(keys, list):
                keys.append(key)
            else:
                table[band] = [keys, key]

    def query(self, signature: MinHash) -> set[str]:
        found: set[str] = set()
        for table, band in zip(self._tables, self._band_keys(signature)):
            keys = table.get(band)
            if isinstance(keys, str):
                found.add(keys)
            elif keys is not None:
                found.update(keys)
        return found
