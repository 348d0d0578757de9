"""How much of the crawled text the index holds: the "nothing lost" measure. Scrapy-free.

A page's sentences and lines (of at least ``SHINGLE`` words) are held when every word ``SHINGLE``-gram of
theirs is in some stored point's text: a sentence cut by a chunk boundary is not counted lost,
a sentence the index holds nowhere is. Link targets are left out, as everywhere in dedup.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from harvester.dedup.aggregate import SHINGLE, passages
from harvester.dedup.shingles import markdown_words, shingle_hashes, word_hashes

# A line ends a unit too: a list item, a table row, a line of code.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")


def stored_shingles(texts: Iterable[str], *, size: int = SHINGLE) -> set[int]:
    """The word ``size``-grams of every stored point's text."""
    held: set[int] = set()
    for text in texts:
        for passage in passages(text):
            held.update(shingle_hashes(word_hashes(markdown_words(passage)), size).tolist())
    return held


def text_held(markdown: str, held: set[int], *, size: int = SHINGLE) -> float | None:
    """The share of ``markdown``'s sentence words whose sentence the index holds (``stored_shingles``),
    or None when the page has no sentence long enough to tell."""
    total = kept = 0
    for passage in passages(markdown):
        for sentence in _SENTENCE_END.split(passage):
            hashes = shingle_hashes(word_hashes(markdown_words(sentence)), size).tolist()
            if not hashes:
                continue
            words = len(hashes) + size - 1
            total += words
            if all(h in held for h in hashes):
                kept += words
    return kept / total if total else None


def text_kept(pages: Mapping[str, str], stored: Iterable[str], *, size: int = SHINGLE) -> dict[str, float]:
    """For each page (URL to Markdown) that has sentences to tell, the share of its text the
    stored point texts hold (1.0: nothing of it lost)."""
    held = stored_shingles(stored, size=size)
    shares = {url: text_held(markdown, held, size=size) for url, markdown in pages.items()}
    return {url: share for url, share in shares.items() if share is not None}
