"""How much of the crawled text the index holds: the "nothing lost" measure. Scrapy-free.

A stored point holds what search reads of it (``point_text``): its context line (page title and
heading path: a heading with no text of its own before its first subheading is only there) and its
text. A page's sentences and lines (of at least ``SHINGLE`` words) are held when every word
``SHINGLE``-gram of theirs is in some stored point's text, or crosses a chunk boundary: the words
before it end a stored passage and the words after it start one. A sentence cut by a chunk
boundary (between sentences, or inside one too long for a chunk) is not counted lost; a sentence
the index holds nowhere is. Link targets are left out, as everywhere in dedup.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harvester.chunking.context import embedding_text
from harvester.dedup.aggregate import SHINGLE, passages
from harvester.dedup.shingles import markdown_words, shingle_hashes, word_hashes
from harvester.markdown.grammar import fence_opening, is_table_start

if TYPE_CHECKING:
    import numpy as np

# A line ends a unit too: a list item, a table row, a line of code.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")


@dataclass
class StoredText:
    """The word n-grams of the stored point texts: every ``size``-gram, and the first and last
    1 to ``size`` words of each passage (where a chunk may have cut a sentence)."""

    size: int = SHINGLE
    grams: set[int] = field(default_factory=set)
    heads: set[tuple[int, int]] = field(default_factory=set)  # (length, hash of the first words)
    tails: set[tuple[int, int]] = field(default_factory=set)  # (length, hash of the last words)

    def add(self, text: str) -> None:
        for passage in passages(text):
            words = word_hashes(markdown_words(passage))
            self.grams.update(shingle_hashes(words, self.size).tolist())
            # A piece of a code block or table may repeat its fence or header: the page's text then
            # starts after it.
            body = word_hashes(markdown_words(_unwrapped(passage)))
            for length in range(1, min(self.size, len(words)) + 1):
                self.tails.add((length, _gram(words[-length:])))
                self.heads.add((length, _gram(words[:length])))
            for length in range(1, min(self.size, len(body)) + 1):
                self.heads.add((length, _gram(body[:length])))

    def holds(self, words: list[str]) -> bool:
        """Whether every ``size``-gram of ``words`` (one sentence or line) is stored, or spans a cut
        where one stored passage ends and another starts."""
        hashes = word_hashes(words)
        grams = shingle_hashes(hashes, self.size).tolist()
        cuts: dict[int, bool] = {}
        for start, gram in enumerate(grams):
            if gram in self.grams:
                continue
            for cut in range(start + 1, start + self.size):
                if cut not in cuts:
                    cuts[cut] = self._is_cut(hashes, cut)
                if cuts[cut]:
                    break
            else:
                return False
        return True

    def _is_cut(self, hashes: np.ndarray, cut: int) -> bool:
        before, after = hashes[max(0, cut - self.size):cut], hashes[cut:cut + self.size]
        return (len(before), _gram(before)) in self.tails and (len(after), _gram(after)) in self.heads


def _unwrapped(passage: str) -> str:
    """``passage`` without the fence opening or table header that starts it, if one does."""
    lines = passage.split("\n")
    if fence_opening(lines[0]):
        return "\n".join(lines[1:])
    return "\n".join(lines[2:]) if is_table_start(lines, 0) else passage


def _gram(hashes: np.ndarray) -> int:
    """One hash of all the words whose ``word_hashes`` are ``hashes``."""
    return int(shingle_hashes(hashes, len(hashes))[0])


def point_text(payload: Mapping[str, Any]) -> str:
    """A stored point's text as it is embedded and indexed: its context line, then its page content
    (the payload of ``harvester.index.store``)."""
    return embedding_text(payload.get("metadata", {}).get("context", ""), payload.get("page_content", ""))


def stored_text(texts: Iterable[str], *, size: int = SHINGLE) -> StoredText:
    """What every stored point's text holds, for ``text_held``."""
    held = StoredText(size)
    for text in texts:
        held.add(text)
    return held


def text_held(markdown: str, held: StoredText) -> float | None:
    """The share of ``markdown``'s sentence words whose sentence the index holds (``stored_text``),
    or None when the page has no sentence long enough to tell."""
    total = kept = 0
    for passage in passages(markdown):
        for sentence in _SENTENCE_END.split(passage):
            words = markdown_words(sentence)
            if len(words) < held.size:
                continue
            total += len(words)
            if held.holds(words):
                kept += len(words)
    return kept / total if total else None


def text_kept(pages: Mapping[str, str], stored: Iterable[str], *, size: int = SHINGLE) -> dict[str, float]:
    """For each page (URL to Markdown) that has sentences to tell, the share of its text the
    stored point texts hold (1.0: nothing of it lost)."""
    held = stored_text(stored, size=size)
    shares = {url: text_held(markdown, held) for url, markdown in pages.items()}
    return {url: share for url, share in shares.items() if share is not None}
