"""BM25-style sparse vectors for Qdrant's lexical search, computed locally.

Qdrant applies the IDF part itself (``Modifier.IDF`` on the sparse vector), over the collection as it
is; we send each chunk's term-frequency part and each query's terms. Terms are case-folded ``\\w+``
words; identifiers are also split at ``_`` and ``.`` so ``url_for`` matches "url for" and the reverse.
Terms map to 31-bit indices by CRC-32: collisions are rare at documentation vocabulary sizes and only
merge two terms' weights.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter

_WORD = re.compile(r"\w+(?:[._]\w+)*")
_PARTS = re.compile(r"[._]")

K1 = 1.2
B = 0.75
AVERAGE_TERMS = 150.0  # a typical chunk; only the length normalisation depends on it


def terms(text: str) -> list[str]:
    """The indexed terms of ``text``: words, and the parts of dotted or snake_case identifiers."""
    out: list[str] = []
    for match in _WORD.finditer(text.casefold()):
        word = match.group()
        out.append(word)
        if _PARTS.search(word):
            out.extend(part for part in _PARTS.split(word) if part)
    return out


def term_index(term: str) -> int:
    return zlib.crc32(term.encode("utf-8")) & 0x7FFFFFFF


def document_vector(text: str) -> tuple[list[int], list[float]]:
    """Sparse (indices, values): BM25's saturated term frequency, length-normalised."""
    counts = Counter(terms(text))
    length = sum(counts.values()) or 1
    norm = K1 * (1 - B + B * length / AVERAGE_TERMS)
    return _merge((term_index(t), tf * (K1 + 1) / (tf + norm)) for t, tf in counts.items())


def query_vector(text: str) -> tuple[list[int], list[float]]:
    """Sparse (indices, values) of a query: each distinct term once."""
    return _merge((term_index(t), 1.0) for t in set(terms(text)))


def _merge(pairs) -> tuple[list[int], list[float]]:  # type: ignore[no-untyped-def]
    merged: dict[int, float] = {}
    for index, value in pairs:
        merged[index] = merged.get(index, 0.0) + value
    indices = sorted(merged)
    return indices, [merged[i] for i in indices]
