"""Aggregate pages: pages that repeat the content of several other pages of the same crawl (mdBook's
``print.html``, Sphinx ``singlehtml``, "print this chapter", tag pages that inline their posts).
Scrapy-free.

They are not documents of their own: in search they outrank the specific page that holds the same
text, because they carry every query's words somewhere. They are recognised by containment, as the
pages stream in, whichever arrives first:

- *covered*: the share of a page's text also found on other pages of the crawl;
- *largest*: the share the single most similar other page accounts for;

both counting only pages not already found to be aggregates, so a partial aggregate inside a
larger one (a tag page inside a yearly archive, a chapter's print page inside the whole book's) is
still recognised.

A page is an aggregate when ``covered >= share`` and ``covered - largest >= spread``: nearly all of
it is elsewhere (the default share is 0.95: a page with a paragraph of its own stays), and not on
one page only. The second condition keeps the specific pages (each one is
contained whole in the aggregate: one page explains all of it), exact or near copies (one page
again), and pages whose repeated part is boilerplate (any single page explains it). A page with
its own content beside a little repeated text has a low ``covered`` and stays.

Nothing is lost by a decision: a page that stands for copies of itself (``exempt``) is never an
aggregate, and an aggregate's passages that no kept page holds (``own_passages``) stay in the index.

Text is compared as word 8-grams (Markdown link targets and image sources dropped, so the same
paragraph linked differently still matches), sampled by hash (one in ``sample``) to bound memory on
large crawls; containment estimated on a sample stays unbiased.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable

from harvester.dedup.compact import CompactIntMap
from harvester.dedup.shingles import markdown_word_hashes, markdown_words, shingle_hashes

SHINGLE = 8
SAMPLE = 8
SPREAD = 0.25
# A page with fewer sampled shingles than this is too short to judge (and never an aggregate).
MIN_SHINGLES = 8
# Owners remembered per shingle: text found on more pages than this is boilerplate-like, and the
# pages beyond it are still counted as covered, against the first owners.
MAX_OWNERS = 8


# A passage (a Markdown block) shorter than this is a heading or a caption, not text of its own.
PASSAGE_WORDS = 12
# Owners remembered per passage: whether a page other than the first holds it is all that matters.
PASSAGE_OWNERS = 2


def passages(markdown: str) -> list[str]:
    """The blocks of ``markdown`` (paragraphs, list items run together, code blocks), in order."""
    return [block.strip() for block in markdown.split("\n\n") if block.strip()]


def passage_key(text: str) -> int | None:
    """The identity of a passage by its words (link targets left out), or None when it is too short."""
    words = markdown_word_hashes.__wrapped__(text)  # not the cached page's words: kept for its shingles
    return hash(words.tobytes()) if len(words) >= PASSAGE_WORDS else None


def sampled_shingles(markdown: str, *, size: int = SHINGLE, sample: int = SAMPLE) -> set[int]:
    """The hashes of the word ``size``-grams of ``markdown`` (link targets left out) that lie within
    one passage, kept by the 1-in-``sample`` sampling. An n-gram across two passages says only how
    they were arranged: a page made of other pages' paragraphs holds no text of its own."""
    import numpy as np

    words = markdown_word_hashes(markdown)
    hashes = shingle_hashes(words, size)
    if not len(hashes):
        return set()
    lengths = [len(markdown_words(block)) for block in passages(markdown)]
    if sum(lengths) == len(words) and len(lengths) > 1:
        # The word index where each passage after the first starts; a shingle starting at i crosses
        # one when the next start after i is within its size.
        starts = np.cumsum(lengths[:-1])
        positions = np.arange(len(hashes))
        following = np.searchsorted(starts, positions, side="right")
        limit = np.append(starts, len(words))[following]
        hashes = hashes[positions + size <= limit]
    return set(hashes[hashes % hashes.dtype.type(sample) == 0].tolist())


class AggregateDetector:
    """Decides, as pages arrive, which are aggregates of the others (see the module docstring).

    ``add`` returns the keys newly decided: the page just added (it arrived after the pages it
    repeats) and/or earlier pages (they arrived first; the pages they repeat came later). A
    decision holds for the rest of the crawl.
    """

    def __init__(self, share: float, *, spread: float = SPREAD) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"aggregate share must be in (0, 1], got {share!r}")
        self.share = share
        self.spread = spread
        self.aggregates: set[str] = set()
        self._keys: list[str] = []
        self._index: dict[str, int] = {}
        self._shingles: list[array[int]] = []
        self._aggregate: set[int] = set()
        # Which pages hold a sampled shingle (a passage): one page, as most have, or a list.
        self._owners = CompactIntMap(value_bits=32, key_type="uint32")  # shingle hashes are 32-bit
        self._size: list[int] = []
        self._covered: list[int] = []
        # The pages each page shares a sampled shingle with: the pages to judge again when it is
        # decided. An array a page, not a Counter: some pages (the first holders of a site's common
        # phrases) share one with every later page of the crawl.
        self._overlap: list[array[int]] = []
        self._exempt: set[str] = set()
        self._passage_owners = CompactIntMap(value_bits=32, key_type="int64")  # Python hashes

    def exempt(self, key: str) -> None:
        """The page ``key`` stands for others (their copy in the index): never decide it an aggregate."""
        self._exempt.add(key)

    def add(self, key: str, shingles: set[int], passage_keys: Iterable[int | None] = ()) -> list[str]:
        """Count the page ``key`` with its ``sampled_shingles`` and the ``passage_key`` of each of
        its passages; the keys now found to be aggregates."""
        page = len(self._keys)
        for passage in passage_keys:
            if passage is None:
                continue
            owners = self._passage_owners.get(passage)
            if owners is None:
                self._passage_owners[passage] = page
            elif isinstance(owners, int):
                if owners != page:
                    self._passage_owners[passage] = [owners, page]
            elif len(owners) < PASSAGE_OWNERS and page not in owners:
                owners.append(page)
        self._keys.append(key)
        self._index[key] = page
        self._shingles.append(array("I", shingles))
        self._size.append(len(shingles))
        self._covered.append(0)
        overlap: dict[int, None] = {}  # in the order met, as the decisions below are made
        order = list(shingles)
        first: list[int] = []  # most shingles have one owner: no list
        for shingle, owners in zip(order, self._owners.get_many(order), strict=True):
            if owners is None:
                first.append(shingle)
                continue
            if isinstance(owners, int):
                owners = [owners]
                self._owners[shingle] = owners
                self._covered[owners[0]] += 1
            self._covered[page] += 1
            overlap.update(dict.fromkeys(owners))
            if len(owners) < MAX_OWNERS:
                owners.append(page)
        self._owners.put_new(first, page)
        overlap.pop(page, None)
        self._overlap.append(array("i", overlap))
        for other in overlap:
            self._overlap[other].append(page)
        decided: list[str] = []
        pending = [page, *overlap]
        while pending:
            candidate = pending.pop()
            if (candidate not in self._aggregate and self._keys[candidate] not in self._exempt
                    and self._is_aggregate(candidate)):
                self._aggregate.add(candidate)
                self.aggregates.add(self._keys[candidate])
                decided.append(self._keys[candidate])
                # A page it contains may be a smaller aggregate, hidden behind it until now.
                pending.extend(o for o in self._overlap[candidate] if o not in self._aggregate)
        return decided

    def figures(self, key: str) -> tuple[float, float] | None:
        """(covered, largest) of the page ``key`` against the pages that are not aggregates, or
        None if unknown or too short to judge."""
        page = self._index.get(key)
        return None if page is None else self._shares(page)

    def holders(self, key: str) -> list[str]:
        """The pages that are not aggregates holding text of the page ``key``, the most first."""
        page = self._index.get(key)
        if page is None:
            return []
        held: Counter[int] = Counter()
        for owners in self._owners.get_many(self._shingles[page]):
            if owners is not None and not isinstance(owners, int):
                held.update(o for o in owners if o != page and o not in self._aggregate)
        return [self._keys[other] for other, _ in held.most_common()]

    def own_passages(self, key: str, texts: Iterable[str], *, cut: bool = False) -> list[str]:
        """The passages of ``texts`` (of the page ``key``) that no kept page holds: not the same
        passage on another page, and not mostly made of text found elsewhere. ``cut``: the texts
        may be pieces of passages (a chunk's), which only their sampled shingles can place; one
        too short to have any is not counted as text of its own."""
        page = self._index.get(key, -1)
        own = []
        for text in texts:
            passage = passage_key(text)
            if passage is None:
                continue
            found = self._passage_owners.get(passage)
            owners = () if found is None else found
            if any(o != page and o not in self._aggregate for o in ([owners] if isinstance(owners, int) else owners)):
                continue
            shingles = sampled_shingles(text)
            if (shingles and self._held_share(page, shingles) >= 0.5) or (cut and not shingles):
                continue
            own.append(text)
        return own

    def _held_share(self, page: int, shingles: set[int]) -> float:
        held = 0
        for owners in self._owners.get_many(list(shingles)):
            if owners is None:
                continue
            if any(o != page and o not in self._aggregate for o in ([owners] if isinstance(owners, int) else owners)):
                held += 1
        return held / len(shingles)

    def _shares(self, page: int) -> tuple[float, float] | None:
        size = self._size[page]
        if size < MIN_SHINGLES:
            return None
        covered = common = 0
        per_page: Counter[int] = Counter()
        for owners in self._owners.get_many(self._shingles[page]):
            if owners is None or isinstance(owners, int):  # only this page holds it
                continue
            others = [o for o in owners if o != page and o not in self._aggregate]
            if others:
                covered += 1
                if len(owners) >= MAX_OWNERS:
                    # Boilerplate-like: any page explains it, and the page that explains the rest may
                    # have come after the owners remembered (its share would miss this text).
                    common += 1
                else:
                    per_page.update(others)
        return covered / size, (max(per_page.values(), default=0) + common) / size

    def _is_aggregate(self, page: int) -> bool:
        # The running counts bound the exact shares from above: most pages stop here.
        if self._size[page] < MIN_SHINGLES or self._covered[page] < self.share * self._size[page]:
            return False
        shares = self._shares(page)
        if shares is None:
            return False
        covered, largest = shares
        return covered >= self.share and covered - largest >= self.spread
