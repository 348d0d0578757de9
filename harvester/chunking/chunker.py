"""Heading-aware, token-bounded chunking of documentation Markdown.

``chunk_markdown`` turns one page of Markdown into ``TextChunk`` objects for
embedding.  Each chunk belongs to exactly one heading section, starts with that
section's heading line so it reads on its own, and carries the stack of
enclosing headings as ``heading_path``.

Guarantees:

* every chunk's ``token_count`` (measured by the caller's counter on the final
  text) is ``<= max_tokens``; the final texts are verified in one batch and any
  chunk that is over (tokenizers are not perfectly additive) is re-split;
* fenced code blocks and GFM tables are never cut unless they alone exceed the
  budget; their pieces are re-fenced (same fence and info string) or repeat the
  table header, so every chunk has balanced fences;
* prose is cut at sentence ends (Latin ``.!?`` + whitespace, CJK ``。！？``),
  then at whitespace; only a single "word" longer than the budget is cut by
  characters;
* optional overlap repeats trailing *prose* sentences of the previous chunk of
  the same section (never code or table pieces).

Token counting is the expensive part.  With ``token_index`` (a tokenizer whose
tokens never cross whitespace, such as BERT's WordPiece: see
``harvester.embedding.tokenizer.ModelTokenizer``) the page is tokenized once: every
block, sentence, line and word the chunker measures is a stretch of the page
cut at whitespace (or after a CJK full stop), and its count is the number of
the page's tokens that start inside it (two binary searches in the index).  A
chunk is such stretches joined by whitespace, so its count is their sum: the
limits hold without encoding any chunk again.  Only what is not a stretch of
the page (normalised headings, pieces of a word cut by characters) is encoded
on its own, and a chunk holding a word cut by characters is verified by
encoding it.

Without ``token_index`` counting is batched: all headings and blocks of a page
in one call, the split units of all oversized blocks of a page in one call, and
the final verification in one call.  Block counts are summed while packing,
which is exact for whitespace/WordPiece counters and approximately so for
others; the verification pass catches the rest.

Plain Python instead of ``semchunk``: we need Markdown-structure awareness
(fences, tables, headings), sentence-level overlap and a cached, page-batched
counter; semchunk only covers the generic recursive text split, which here is a
few lines of regex.

Only ATX headings are recognised (the converter emits ATX); setext headings and
indented (non-fenced) code blocks are treated as prose.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from harvester.markdown.grammar import HEADING, Fence, fence_closes, fence_opening, is_table_start

TokenCounter = Callable[[Sequence[str]], list[int]]
# Where a text's tokens are: ``(anchors, totals)``, ``totals[i]`` tokens start before the offset
# ``anchors[i]`` (ascending, in characters), ``totals[-1]`` in all; a stretch that starts and ends
# at an anchor or at whitespace holds ``totals[bisect(anchors, end)] - totals[bisect(anchors,
# start)]``. Every token's start as an anchor is one (``totals`` is then ``range(len + 1)``);
# fewer anchors (a word's or a run's start) are enough where the chunker never cuts between them.
TokenIndex = tuple[Sequence[int], Sequence[int]]
TokenIndexer = Callable[[str], TokenIndex]

__all__ = ["TextChunk", "TokenCounter", "TokenIndex", "TokenIndexer", "chunk_markdown", "tokenizer_counter",
           "whitespace_counter"]

# Re-splitting converges in 1-2 rounds for real tokenizers; the cap only guards
# against a pathological counter before the character-level last resort.
_MAX_ROUNDS = 8
_BLOCK_SEP = "\n\n"

# Sphinx/MkDocs permalink anchors ("[¶](#id)") are noise in every chunk.
_PERMALINK = re.compile(r"\[\s*(?:¶|§|#|🔗)?\s*\]\([^)]*\)")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
# Sentence ends. Each Latin and list-item alternative starts with the character it consumes
# (the stop before it checked by a lookbehind after it), so the regex engine skips ahead to
# whitespace instead of trying lookbehinds at every position; the CJK one cannot (its separator
# may be empty), so text without a CJK full stop is cut without it.
_LATIN_STOP = (r"\s(?<=[.!?]\s)\s*"  # Latin: needs whitespace after the stop
               r"|\s(?<=[.!?][\"'”’)\]]\s)\s*")  # ... or after a closing quote or bracket
_CJK_SEP = r"(?:(?<=[。！？])(?![」』”’）)])|(?<=[。！？][」』”’）)]))\s*"  # CJK: no space needed
_LIST_ITEM = r"\n(?=[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t])"  # list items end a "sentence" too
_SENTENCE_SEP = re.compile(f"{_LATIN_STOP}|{_CJK_SEP}|{_LIST_ITEM}")
_LATIN_SENTENCE_SEP = re.compile(f"{_LATIN_STOP}|{_LIST_ITEM}")
_CJK_STOP = re.compile("[。！？]")
_SPACE = re.compile(r"\s+")
# Characters Python cuts at as whitespace that tokenizers treat otherwise (BERT's drops the control
# characters among them, joining the words around): a page holding one is counted text by text.
_NOT_BERT_SPACE = re.compile(
    "[" + "".join(c for c in map(chr, range(0x3000 + 1)) if c.isspace() and c not in " \t\n\r"
                  and unicodedata.category(c) != "Zs") + "]")
_NEWLINE = re.compile(r"\n")
# The same separators captured, for re.split (``_split_on``).
_SPLITTERS = {pattern: re.compile(f"({pattern.pattern})")
              for pattern in (_SENTENCE_SEP, _LATIN_SENTENCE_SEP, _SPACE, _NEWLINE)}


@dataclass(frozen=True)
class TextChunk:
    """One embeddable piece of a page."""

    text: str
    heading_path: tuple[str, ...]
    token_count: int


def whitespace_counter(texts: Sequence[str]) -> list[int]:
    """Count whitespace-separated words; a cheap stand-in for a tokenizer."""
    return [len(text.split()) for text in texts]


def tokenizer_counter(tokenizer: Any) -> TokenCounter:
    """Wrap a Hugging Face (fast) tokenizer as a batched TokenCounter."""

    def count(texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        # verbose=False: pages are longer than model_max_length by design here.
        encoded = tokenizer(
            list(texts),
            add_special_tokens=False,
            return_attention_mask=False,
            return_token_type_ids=False,
            verbose=False,
        )
        return [len(ids) for ids in encoded["input_ids"]]

    return count


def chunk_markdown(
    markdown: str,
    count_tokens: TokenCounter,
    *,
    max_tokens: int,
    overlap_tokens: int = 0,
    token_index: TokenIndexer | None = None,
) -> list[TextChunk]:
    """Split one page of Markdown into heading-scoped chunks of <= max_tokens.

    ``token_index``: the same tokenizer as ``count_tokens``, telling where a text's tokens are,
    when its tokens never cross whitespace: the page is then tokenized once (see the module
    docstring).
    """
    if max_tokens < 1 or overlap_tokens < 0:
        raise ValueError("max_tokens must be >= 1 and overlap_tokens >= 0")
    parser = _Parser()
    sections = parser.parse(markdown)
    if not sections:
        return []
    index = None
    if token_index is not None and not _NOT_BERT_SPACE.search(parser.text):
        index = token_index(parser.text)
    counts = _Counts(count_tokens, index)
    counts.prime([_Span(s.heading, "") for s in sections] + [b.span for s in sections for b in s.blocks])
    layouts = [_layout(section, max_tokens, overlap_tokens, counts) for section in sections]
    _prime_splits(layouts, counts)
    drafts = [d for layout in layouts for d in _section_drafts(layout, overlap_tokens, counts)]
    return _enforce_limit(drafts, max_tokens, counts)


# --------------------------------------------------------------------------- data


@dataclass
class _Block:
    kind: str  # "prose" | "code" | "table"
    lines: list[str]
    start: int | None = None  # offset of its text in the page text (None: not a stretch of it)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def span(self) -> _Span:
        return _Span(self.text, "", self.start)


@dataclass
class _Section:
    heading: str  # normalised heading line, "" before the first heading
    path: tuple[str, ...]
    blocks: list[_Block] = field(default_factory=list)


class _Span(NamedTuple):
    # A tuple, not a frozen dataclass: a long page is cut into tens of thousands of these, and a
    # frozen dataclass pays a setattr call per field.
    text: str
    sep: str  # original whitespace that preceded it inside its block
    start: int | None = None  # offset of text in the page text, when it is a stretch of it


@dataclass(frozen=True)
class _Piece:
    text: str
    tokens: int
    kind: str
    sep: str
    block: int
    wrap: tuple[str, str] | None = None  # fence/table header repeated around `inner`
    inner: str = ""
    overlap: bool = False
    # Its count is the sum of counts of stretches joined at whitespace (false for a piece holding
    # a word cut by characters), so a chunk of such pieces needs no verification.
    additive: bool = True


@dataclass(frozen=True)
class _Layout:
    section: _Section
    heading: str
    budget: int
    split_prose: bool  # sentence-split all prose so overlap can reuse sentences


@dataclass(frozen=True)
class _Draft:
    path: tuple[str, ...]
    heading: str
    pieces: list[_Piece]

    def text(self) -> str:
        body = _join(self.pieces)
        return (f"{self.heading}{_BLOCK_SEP}{body}" if self.heading else body).rstrip()


class _Counts:
    """Memoising front for the caller's counter, so each phase asks in one batch; with the page's
    token index, a stretch of the page is counted from it instead."""

    def __init__(self, count_tokens: TokenCounter, index: TokenIndex | None = None) -> None:
        self._count = count_tokens
        self._cache: dict[str, int] = {}
        self._index = index

    @property
    def exact(self) -> bool:
        """Whether stretches of the page are counted from the page's tokens."""
        return self._index is not None

    def _located(self, span: _Span) -> bool:
        return self._index is not None and span.start is not None

    def prime(self, spans: Iterable[_Span | str]) -> None:
        texts = (s for s in spans if isinstance(s, str) or not self._located(s))
        missing = [t for t in dict.fromkeys(t if isinstance(t, str) else t.text for t in texts)
                   if t not in self._cache]
        if not missing:
            return
        sizes = list(self._count(missing))
        if len(sizes) != len(missing):
            raise ValueError("count_tokens must return one count per text")
        self._cache.update(zip(missing, sizes))

    def many(self, spans: Iterable[_Span | str]) -> list[int]:
        spans = list(spans)
        self.prime(spans)
        return [self._size(s) for s in spans]

    def one(self, span: _Span | str) -> int:
        if not isinstance(span, str) and span.start is not None and self._index is not None:
            return self._size(span)
        return self.many([span])[0]

    def _size(self, span: _Span | str) -> int:
        if isinstance(span, str):
            return self._cache[span]
        if span.start is not None and self._index is not None:
            anchors, totals = self._index
            end = span.start + len(span.text)
            return totals[bisect_left(anchors, end)] - totals[bisect_left(anchors, span.start)]
        return self._cache[span.text]


# --------------------------------------------------------------------------- parsing


class _Parser:
    """Line-based block parser: just enough Markdown to know where not to cut."""

    def __init__(self) -> None:
        self.sections = [_Section("", ())]
        self.stack: list[tuple[int, str]] = []
        self.para: list[str] = []
        self.para_start = 0
        # The page as the blocks see it (lines without trailing whitespace), and where each line
        # starts in it: every block is a stretch of this text.
        self.text = ""
        self.offsets: list[int] = []

    def parse(self, markdown: str) -> list[_Section]:
        lines = [line.rstrip() for line in markdown.splitlines()]
        self.text = "\n".join(lines)
        offset = 0
        for line in lines:
            self.offsets.append(offset)
            offset += len(line) + 1
        i = 0
        while i < len(lines):
            i = self._step(lines, i)
        self._flush()
        return [s for s in self.sections if s.blocks]

    def _step(self, lines: list[str], i: int) -> int:
        line = lines[i]
        heading = HEADING.match(line) if "#" in line[:4] else None  # up to 3 spaces, then #
        fence = None if heading else fence_opening(line)
        table = not heading and not fence and is_table_start(lines, i)
        if heading or not line or fence or table:
            self._flush()
        if heading:
            self._open_section(len(heading.group(1)), heading.group(2) or "")
            return i + 1
        if fence:
            return self._read_code(lines, i, fence)
        if table:
            return self._read_table(lines, i)
        if line:
            if not self.para:
                self.para_start = i
            self.para.append(line)
        return i + 1

    def _flush(self) -> None:
        if self.para:
            self._add(_Block("prose", self.para, self.offsets[self.para_start]))
            self.para = []

    def _add(self, block: _Block) -> None:
        self.sections[-1].blocks.append(block)

    def _open_section(self, level: int, raw: str) -> None:
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        self.stack.append((level, _heading_title(raw)))
        line = f"{'#' * level} {_PERMALINK.sub('', raw).strip()}".rstrip()
        self.sections.append(_Section(line, tuple(title for _, title in self.stack)))

    def _read_code(self, lines: list[str], i: int, fence: Fence) -> int:
        end = i + 1
        while end < len(lines) and not fence_closes(lines[end], fence):
            end += 1
        body = lines[i : end + 1]
        start: int | None = self.offsets[i]
        if end >= len(lines):  # unclosed fence runs to EOF; close it to keep chunks balanced
            body.append(re.sub(r"\S", " ", fence.prefix) + fence.marker)
            start = None  # its last line is not in the page
        self._add(_Block("code", body, start))
        return end + 1

    def _read_table(self, lines: list[str], i: int) -> int:
        end = i + 2
        while end < len(lines) and "|" in lines[end] and fence_opening(lines[end]) is None:
            end += 1
        self._add(_Block("table", lines[i:end], self.offsets[i]))
        return end


def _heading_title(raw: str) -> str:
    text = _LINK.sub(r"\1", _PERMALINK.sub("", raw)).replace("`", "")
    return " ".join(_ESCAPE.sub(r"\1", text).split())


# --------------------------------------------------------------------------- planning


def _layout(section: _Section, max_tokens: int, overlap: int, counts: _Counts) -> _Layout:
    heading = section.heading
    if heading and counts.one(heading) > max_tokens // 2:
        heading = ""  # a monster heading would starve the body; heading_path still has it
    budget = max_tokens - (counts.one(heading) if heading else 0)
    total = sum(counts.many(b.span for b in section.blocks))
    return _Layout(section, heading, budget, overlap > 0 and total > budget)


def _needs_split(block: _Block, layout: _Layout, counts: _Counts) -> bool:
    too_big = counts.one(block.span) > layout.budget
    return too_big or (layout.split_prose and block.kind == "prose")


def _prime_splits(layouts: list[_Layout], counts: _Counts) -> None:
    """Count the split units of all oversized blocks of a page in two batches."""
    if counts.exact:
        return  # stretches of the page are counted from its token index: nothing to batch
    units = [(span, lay.budget) for lay in layouts for span in _split_units(lay, counts)]
    counts.prime(span for span, _ in units)
    over = [span for span, budget in units if counts.one(span) > budget]
    counts.prime(word for span in over for word in _words(span))


def _split_units(layout: _Layout, counts: _Counts) -> list[_Span]:
    """The spans _split_block will count first (a superset for code and tables)."""
    spans: list[_Span] = []
    for block in layout.section.blocks:
        if not _needs_split(block, layout, counts):
            continue
        if block.kind == "prose":
            spans.extend(_split_on(block.text, _SENTENCE_SEP, block.start))
        else:
            spans.extend(_split_on(block.text, _NEWLINE, block.start))
            spans.append(_Span(_wrapper(block)[0], "", block.start))
    return spans


def _section_drafts(layout: _Layout, overlap: int, counts: _Counts) -> list[_Draft]:
    groups = [_block_group(b, i, layout, counts) for i, b in enumerate(layout.section.blocks)]
    packed = _pack_groups(groups, layout.budget, overlap)
    return [_Draft(layout.section.path, layout.heading, pieces) for pieces in packed]


def _block_group(block: _Block, index: int, layout: _Layout, counts: _Counts) -> list[_Piece]:
    if _needs_split(block, layout, counts):
        return _split_block(block, index, layout.budget, counts)
    return [_Piece(block.text, counts.one(block.span), block.kind, _BLOCK_SEP, index)]


def _pack_groups(groups: list[list[_Piece]], budget: int, overlap: int) -> list[list[_Piece]]:
    """Greedy packing; a block that fits a fresh chunk is never spread over two."""
    chunks: list[list[_Piece]] = []
    current: list[_Piece] = []
    for group in groups:
        size = sum(p.tokens for p in group)
        if current and size <= budget and _tokens(current) + size > budget:
            chunks.append(current)
            current = _overlap(current, min(overlap, budget - size))
        for piece in group:
            if current and _tokens(current) + piece.tokens > budget:
                chunks.append(current)
                current = _overlap(current, min(overlap, budget - piece.tokens))
            current.append(piece)
    return chunks + [current] if current else chunks


def _overlap(previous: list[_Piece], limit: int) -> list[_Piece]:
    """Trailing prose of the previous chunk, never all of it, within limit tokens."""
    taken: list[_Piece] = []
    if limit <= 0:
        return taken
    for piece in reversed(previous[1:]):
        if piece.kind != "prose" or _tokens(taken) + piece.tokens > limit:
            break
        taken.append(replace(piece, overlap=True))
    return taken[::-1]


def _tokens(pieces: list[_Piece]) -> int:
    return sum(p.tokens for p in pieces)


def _join(pieces: list[_Piece]) -> str:
    parts = [pieces[0].text]
    for prev, piece in itertools.pairwise(pieces):
        parts.append(piece.sep if piece.block == prev.block else _BLOCK_SEP)
        parts.append(piece.text)
    return "".join(parts)


# --------------------------------------------------------------------------- splitting


def _split_block(block: _Block, index: int, budget: int, counts: _Counts) -> list[_Piece]:
    if block.kind == "prose":
        return _prose_pieces(_split_on(block.text, _SENTENCE_SEP, block.start), index, budget, counts, "")
    prefix, suffix, inner = _wrapper(block)
    return _wrapped_pieces((prefix, suffix), inner, block.kind, index, budget, counts, _wrapper_starts(block))


def _wrapper(block: _Block) -> tuple[str, str, str]:
    """(prefix, suffix, inner text): what each piece of a code block/table repeats."""
    if block.kind == "code":
        return block.lines[0], block.lines[-1], "\n".join(block.lines[1:-1])
    return "\n".join(block.lines[:2]), "", "\n".join(block.lines[2:])


def _wrapper_starts(block: _Block) -> tuple[int | None, int | None, int | None]:
    """Where ``_wrapper(block)``'s prefix, suffix and inner text start in the page text."""
    if block.start is None:
        return None, None, None
    header = len(block.lines[0]) + 1 if block.kind == "code" else len(block.lines[0]) + len(block.lines[1]) + 2
    last = block.start + len(block.text) - len(block.lines[-1])
    return block.start, last if block.kind == "code" else None, block.start + header


def _prose_pieces(
    spans: list[_Span], index: int, budget: int, counts: _Counts, sep: str
) -> list[_Piece]:
    sized = _fit(spans, budget, counts)
    return [_Piece(span.text, n, "prose", span.sep if i else sep, index, additive=span.start is not None)
            for i, (span, n) in enumerate(sized)]


def _wrapped_pieces(
    wrap: tuple[str, str], inner: str, kind: str, index: int, budget: int, counts: _Counts,
    starts: tuple[int | None, int | None, int | None] = (None, None, None),
) -> list[_Piece]:
    """``starts``: where the prefix, the suffix and ``inner`` are in the page text, if they are."""
    overhead = sum(counts.many(_Span(t, "", at) for t, at in zip(wrap, starts) if t))
    lines = _split_on(inner, _NEWLINE, starts[2])
    if not lines or overhead >= budget:
        # The wrapper alone eats the budget: plain lines keep the hard limit
        # (code loses its fences rather than leaving them unbalanced).
        if kind == "code" and lines:
            plain, at = inner, starts[2]
        else:  # a table's header and rows are one stretch of the page; a fence and code are not
            plain, at = _wrap(wrap, inner), starts[0] if kind == "table" else None
        wrap, overhead, lines = ("", ""), 0, _split_on(plain, _NEWLINE, at)
    sized = _pack(_fit(lines, budget - overhead, counts), budget - overhead)
    return [
        _Piece(_wrap(wrap, s.text), n + overhead, kind, _BLOCK_SEP, index, wrap, s.text,
               additive=s.start is not None)
        for s, n in sized
    ]


def _wrap(wrap: tuple[str, str], inner: str) -> str:
    return "\n".join(part for part in (wrap[0], inner, wrap[1]) if part)


def _split_on(text: str, pattern: re.Pattern[str], at: int | None = None) -> list[_Span]:
    """Non-blank spans between separator matches, each remembering its separator (and where it
    is in the page text, when ``text`` is there at ``at``)."""
    if pattern is _SENTENCE_SEP and not _CJK_STOP.search(text):
        pattern = _LATIN_SENTENCE_SEP
    # re.split with the separator captured: texts and separators alternate, no match objects.
    parts = _SPLITTERS[pattern].split(text)
    spans: list[_Span] = []
    sep, offset = "", 0 if at is None else at
    last = len(parts) - 1
    for i in range(0, last + 1, 2):
        chunk = parts[i]
        following = parts[i + 1] if i < last else ""
        if chunk.strip():
            spans.append(_Span(chunk, sep, None if at is None else offset))
            sep = following
        else:
            sep += chunk + following
        offset += len(chunk) + len(following)
    if pattern in (_SENTENCE_SEP, _LATIN_SENTENCE_SEP) and "[" in text:
        return _links_kept_whole(spans)
    return spans


# How many sentences a link's text may run over and still be joined: a longer "link" is a stray "[".
_LINK_SENTENCES = 8


def _links_kept_whole(spans: list[_Span]) -> list[_Span]:
    """Sentences joined again where stops fell inside a link's text ("[I can't log in. When I
    ...](url)"): a cut there leaves half a link at each side of a chunk boundary."""
    joined: list[_Span] = []
    i = 0
    while i < len(spans):
        span, end = spans[i], i
        # The sentence that closes a link may open the next one ("...](a) and [B one.").
        while _open_link(spans[end].text) and (closing := _link_close(spans, end)) is not None:
            end = closing
        text = span.text + "".join(s.sep + s.text for s in spans[i + 1:end + 1])
        joined.append(_Span(text, span.sep, span.start) if end > i else span)
        i = end + 1
    return joined


def _link_close(spans: list[_Span], opened: int) -> int | None:
    """The index of the sentence that closes the link ``spans[opened]`` leaves open, within
    ``_LINK_SENTENCES`` and with no bracket in the sentences between; None if there is none."""
    for end in range(opened + 1, min(opened + 1 + _LINK_SENTENCES, len(spans))):
        if _closes_link(spans[end].text):
            return end
        if "[" in spans[end].text or "]" in spans[end].text:
            return None
    return None


def _open_link(text: str) -> bool:
    return text.rfind("[") > text.rfind("]")


def _closes_link(text: str) -> bool:
    closing, opening = text.find("]("), text.find("[")
    return closing >= 0 and (opening < 0 or closing < opening)


def _fit(spans: list[_Span], budget: int, counts: _Counts) -> list[tuple[_Span, int]]:
    """Spans with counts, over-budget ones replaced by word groups (one batch per level)."""
    sizes = counts.many(spans)
    over = [s for s, n in zip(spans, sizes) if n > budget]
    if not counts.exact:  # else words are counted from the page's token index, one by one
        counts.prime(w for s in over for w in _words(s))
    fitted: list[tuple[_Span, int]] = []
    for span, size in zip(spans, sizes):
        fitted.extend([(span, size)] if size <= budget else _fit_words(span, budget, counts))
    return fitted


def _words(span: _Span) -> list[_Span]:
    words = _split_on(span.text, _SPACE, span.start)
    return [words[0]._replace(sep=span.sep)] + words[1:] if words else []


def _fit_words(span: _Span, budget: int, counts: _Counts) -> list[tuple[_Span, int]]:
    words = _words(span)
    sized: list[tuple[_Span, int]] = []
    for word, size in zip(words, counts.many(words)):
        sized.extend([(word, size)] if size <= budget else _char_pieces(word, budget, counts))
    return _pack(sized, budget)


def _char_pieces(word: _Span, budget: int, counts: _Counts) -> list[tuple[_Span, int]]:
    pieces: list[tuple[_Span, int]] = []
    rest, sep = word.text, word.sep
    while rest:
        cut = _longest_prefix(rest, budget, counts)
        pieces.append((_Span(rest[:cut], sep), counts.one(rest[:cut])))
        rest, sep = rest[cut:], ""
    return pieces


def _longest_prefix(text: str, budget: int, counts: _Counts) -> int:
    # Binary search is sequential, but only words longer than the whole budget get here.
    low, high = 1, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if counts.one(text[:mid]) <= budget:
            low = mid
        else:
            high = mid - 1
    return low


def _pack(sized: list[tuple[_Span, int]], budget: int) -> list[tuple[_Span, int]]:
    """Consecutive spans joined while they fit; the joined span keeps its place in the page text
    only when every part had one (a word cut by characters is no stretch of the page)."""
    packed: list[tuple[list[str], str, int, int | None]] = []
    for span, size in sized:
        if packed and packed[-1][2] + size <= budget:
            parts, sep, total, at = packed[-1]
            parts.extend((span.sep, span.text))
            packed[-1] = (parts, sep, total + size, at if span.start is not None else None)
        else:
            packed.append(([span.text], span.sep, size, span.start))
    return [(_Span("".join(parts), sep, at), total) for parts, sep, total, at in packed]


# --------------------------------------------------------------------------- verification


def _enforce_limit(drafts: list[_Draft], max_tokens: int, counts: _Counts) -> list[TextChunk]:
    for _ in range(_MAX_ROUNDS):
        texts = [d.text() for d in drafts]
        sizes = _sizes(drafts, texts, counts)
        if max(sizes, default=0) <= max_tokens:
            return [TextChunk(t, d.path, n) for t, d, n in zip(texts, drafts, sizes)]
        excess = [size - max_tokens for size in sizes]
        drafts = [
            part
            for draft, over in zip(drafts, excess)
            for part in (_shrink(draft, over, counts) if over > 0 else [draft])
        ]
    return _last_resort(drafts, max_tokens, counts)


def _sizes(drafts: list[_Draft], texts: list[str], counts: _Counts) -> list[int]:
    """The count of each draft's text: the sum of its heading's and pieces' counts when every
    piece is whitespace-joined stretches of the page counted from the page's tokens (the text is
    then those same stretches joined at whitespace), else the counter's on the whole text."""
    if not counts.exact:
        return counts.many(texts)
    summed = [all(p.additive for p in d.pieces) for d in drafts]
    counts.prime(t for t, ok in zip(texts, summed) if not ok)
    return [
        (counts.one(d.heading) if d.heading else 0) + _tokens(d.pieces) if ok else counts.one(t)
        for d, t, ok in zip(drafts, texts, summed)
    ]


def _shrink(draft: _Draft, excess: int, counts: _Counts) -> list[_Draft]:
    pieces = draft.pieces
    if any(p.overlap for p in pieces):
        return [replace(draft, pieces=[p for p in pieces if not p.overlap])]
    if len(pieces) > 1:
        mid = _midpoint(pieces)
        return [replace(draft, pieces=pieces[:mid]), replace(draft, pieces=pieces[mid:])]
    target = max(1, (pieces[0].tokens if pieces[0].additive and counts.exact else counts.one(pieces[0].text)) - excess)
    return [replace(draft, pieces=[p]) for p in _resplit(pieces[0], target, counts)]


def _midpoint(pieces: list[_Piece]) -> int:
    half, running = _tokens(pieces) / 2, 0
    for i, piece in enumerate(pieces[:-1], start=1):
        running += piece.tokens
        if running >= half:
            return i
    return len(pieces) - 1


def _resplit(piece: _Piece, target: int, counts: _Counts) -> list[_Piece]:
    if piece.wrap is not None:
        return _wrapped_pieces(piece.wrap, piece.inner, piece.kind, piece.block, target, counts)
    spans = _split_on(piece.text, _SENTENCE_SEP)
    return _prose_pieces(spans, piece.block, target, counts, piece.sep)


def _last_resort(drafts: list[_Draft], max_tokens: int, counts: _Counts) -> list[TextChunk]:
    """Character cuts measured on the final strings: ugly, but the limit is hard."""
    chunks: list[TextChunk] = []
    for draft in drafts:
        text = draft.text()
        cuts = [(_Span(text, ""), counts.one(text))]
        if cuts[0][1] > max_tokens:
            cuts = _char_pieces(_Span(text, ""), max_tokens, counts)
        for span, _ in cuts:
            if span.text.strip():
                cut = span.text.rstrip()
                chunks.append(TextChunk(cut, draft.path, counts.one(cut)))
    return chunks
