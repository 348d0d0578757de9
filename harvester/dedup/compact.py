"""A map that a crawl fills with an entry per page, per chunk text or per sampled shingle and must
keep small. Scrapy-free.

Dedup remembers something of every page for the whole crawl (the boilerplate counter's chunk-text
counts and earlier chunk ids, the aggregate detector's shingle and passage owners). In dicts of
Python ints that costs about 100 to 170 bytes an entry, memory that grows with the crawl: a key of
32 or 64 bits and a value of 32 to 128 bits are 8 to 24 bytes in numpy arrays. New entries go to a
dict, merged now and then into sorted arrays; what does not fit them (a string key, a list value)
stays in a dict.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any, TypeGuard

KEY_TYPES = ("uint32", "int64", "uint64")
# New entries wait in the dict until they are this share (1/n) of those merged: each costs about
# ten times its share of the arrays there, and each merge copies the arrays once.
FRESH_SHARE = 64
_MISSING = object()


class CompactIntMap:
    """``key -> value`` where most keys are ints of ``key_type`` (``uint32``, ``int64`` or
    ``uint64``) and most values ints in [0, 2**value_bits) (``value_bits`` 32, 64 or 128); any
    other key or value is kept as it is."""

    def __init__(self, value_bits: int = 64, fresh_limit: int = 1 << 10, key_type: str = "uint64") -> None:
        import numpy as np

        if value_bits not in (32, 64, 128):
            raise ValueError(f"value_bits must be 32, 64 or 128, got {value_bits!r}")
        if key_type not in KEY_TYPES:
            raise ValueError(f"key_type must be one of {KEY_TYPES}, got {key_type!r}")
        limits = np.iinfo(key_type)
        self._key_min, self._key_max = int(limits.min), int(limits.max)
        self._value_limit = 1 << value_bits
        self._columns = 2 if value_bits == 128 else 1
        self._fresh_limit = self._merge_at = fresh_limit
        self._fresh: dict[int, int] = {}  # fits the arrays, not merged yet
        self._other: dict[Hashable, Any] = {}  # does not fit them
        self._keys = np.empty(0, dtype=key_type)
        self._values = np.empty((0, self._columns), dtype=np.uint32 if value_bits == 32 else np.uint64)
        self._gone: set[int] = set()  # keys of the arrays popped since

    def _fits_key(self, key: Hashable) -> TypeGuard[int]:
        return type(key) is int and self._key_min <= key <= self._key_max

    def _fits(self, key: Hashable, value: object) -> bool:
        return self._fits_key(key) and type(value) is int and 0 <= value < self._value_limit

    def _stored_at(self, key: Hashable) -> int:
        """The index of ``key`` in the arrays, or -1."""
        if not len(self._keys) or not self._fits_key(key) or key in self._gone:
            return -1
        at = int(self._keys.searchsorted(key))
        return at if at < len(self._keys) and int(self._keys[at]) == key else -1

    def _stored_value(self, at: int) -> int:
        row = self._values[at]
        return int(row[0]) if self._columns == 1 else (int(row[0]) << 64) | int(row[1])

    def get(self, key: Hashable, default: Any = None) -> Any:
        if key in self._other:
            return self._other[key]
        value = self._fresh.get(key)  # type: ignore[call-overload]
        if value is not None:
            return value
        at = self._stored_at(key)
        return default if at < 0 else self._stored_value(at)

    def get_many(self, keys: Sequence[Hashable], default: Any = None) -> list[Any]:
        """``[get(key, default) for key in keys]``, the arrays searched once for all."""
        import numpy as np

        stored: list[int] = [-1] * len(keys)
        if len(self._keys):
            ints = [i for i, key in enumerate(keys) if self._fits_key(key)]
            if ints:
                wanted = np.fromiter((keys[i] for i in ints), dtype=self._keys.dtype, count=len(ints))
                positions = np.minimum(np.searchsorted(self._keys, wanted), len(self._keys) - 1)
                found = (self._keys[positions] == wanted).tolist()
                for i, position, hit in zip(ints, positions.tolist(), found, strict=True):
                    if hit and keys[i] not in self._gone:
                        stored[i] = position
        values = []
        for key, at in zip(keys, stored, strict=True):
            if key in self._other:
                values.append(self._other[key])
                continue
            value = self._fresh.get(key)  # type: ignore[call-overload]
            values.append(value if value is not None else default if at < 0 else self._stored_value(at))
        return values

    def __getitem__(self, key: Hashable) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: Hashable) -> bool:
        return key in self._other or key in self._fresh or self._stored_at(key) >= 0

    def __setitem__(self, key: Hashable, value: Any) -> None:
        if not self._fits(key, value):
            self._fresh.pop(key, None)  # type: ignore[call-overload]
            self._other[key] = value
            return
        self._other.pop(key, None)
        self._fresh[key] = value  # type: ignore[index]
        if len(self._fresh) >= self._merge_at:
            self._merge()

    def put_new(self, keys: Iterable[int], value: int) -> None:
        """``value`` for each of ``keys``: keys of ``key_type`` that no entry has yet (unchecked, for
        the many a page adds at once), and a value that fits."""
        self._fresh.update(dict.fromkeys(keys, value))
        if len(self._fresh) >= self._merge_at:
            self._merge()

    def pop(self, key: Hashable, default: Any = None) -> Any:
        value = self._other.pop(key, None)
        fresh = self._fresh.pop(key, None)  # type: ignore[call-overload]
        at = self._stored_at(key)
        if at >= 0:
            self._gone.add(key)  # type: ignore[arg-type]
        for found in (value, fresh):
            if found is not None:
                return found
        return default if at < 0 else self._stored_value(at)

    def _merge(self) -> None:
        import numpy as np

        keys = np.fromiter(self._fresh, dtype=self._keys.dtype, count=len(self._fresh))
        values = self._as_rows(list(self._fresh.values()))
        order = np.argsort(keys)
        keys, values = keys[order], values[order]
        if len(self._keys):
            at = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
            known = self._keys[at] == keys
            self._values[at[known]] = values[known]  # keys stored before (maybe popped): replaced
            self._gone.difference_update(keys[known].tolist())
            keys, values = keys[~known], values[~known]
        at = np.searchsorted(self._keys, keys)
        self._keys = np.insert(self._keys, at, keys)
        self._values = np.insert(self._values, at, values, axis=0)
        self._fresh = {}
        self._merge_at = max(self._fresh_limit, len(self._keys) // FRESH_SHARE)

    def _as_rows(self, values: list[int]) -> Any:
        import numpy as np

        dtype = self._values.dtype
        if self._columns == 1:
            return np.fromiter(values, dtype=dtype, count=len(values)).reshape(-1, 1)
        mask = (1 << 64) - 1
        rows = np.empty((len(values), 2), dtype=dtype)
        rows[:, 0] = np.fromiter((value >> 64 for value in values), dtype=dtype, count=len(values))
        rows[:, 1] = np.fromiter((value & mask for value in values), dtype=dtype, count=len(values))
        return rows
