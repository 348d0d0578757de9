"""Trust, but verify: whether a publisher's Markdown twin holds what the page's HTML shows.
Scrapy-free.

The HTML extraction is the reference. The twin is used only when it holds every one of the
extraction's code blocks (in its own code blocks), every cell of its tables, every passage of its text (no run of
``PASSAGE_WORDS`` words missing) and nearly all of its text (word shingles); a twin that lost a
tab, an API table or an included file fails one of them, and the HTML conversion stands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harvester.fetch.encoding import composed_text
from harvester.markdown.grammar import Line, classify_lines, is_table_start

DEFAULT_MIN_COVERAGE = 0.9
SHINGLE = 3
# A twin may word a sentence differently from the HTML conversion (a signature, an escaped
# character); a run of this many words of the conversion missing is a passage left out.
PASSAGE_WORDS = 20
_CONTAINED_WORDS = 5
_WORD = re.compile(r"\w+")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n---[ \t]*\n", re.DOTALL)


@dataclass(frozen=True)
class TwinCheck:
    """The verdict on a twin: ``accepted``, else ``reason`` (``empty``, ``coverage``, ``code`` or
    ``table``, ``passage``); ``coverage`` is the share of the extraction's shingles the twin holds,
    ``missing_run`` the longest run of the extraction's words it lacks."""

    accepted: bool
    reason: str
    coverage: float
    missing_code: int = 0
    missing_tables: int = 0
    missing_run: int = 0


def twin_markdown(text: str) -> str:
    r"""A twin's text as stored: line endings made ``\n``, YAML front matter and a byte-order mark
    removed, outer blank lines stripped, composed as the HTML's text is (``composed_text``)."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return composed_text(_FRONT_MATTER.sub("", text, count=1).strip()) + "\n"


def words(markdown: str) -> list[str]:
    r"""Words (``\w+``, case-folded) with link targets left out: the same text linked differently
    or marked up differently has the same words."""
    return _WORD.findall(_LINK_TARGET.sub("]", markdown).casefold())


def code_blocks(markdown: str) -> list[str]:
    """The text of each fenced code block, in order."""
    blocks: list[str] = []
    current: list[str] | None = None
    for line, kind in classify_lines(markdown.splitlines()):
        if kind is Line.CODE and current is not None:
            current.append(line)
        elif kind is Line.FENCE:
            if current is None:
                current = []
            else:
                blocks.append("\n".join(current))
                current = None
    if current is not None:
        blocks.append("\n".join(current))
    return blocks


def table_cells(markdown: str) -> list[list[str]]:
    """The non-empty cells of each pipe table outside code, one list per table."""
    lines = [line for line, kind in classify_lines(markdown.splitlines()) if kind is Line.TEXT]
    tables: list[list[str]] = []
    index = 0
    while index < len(lines):
        if not is_table_start(lines, index):
            index += 1
            continue
        cells: list[str] = []
        row = index
        while row < len(lines) and "|" in lines[row]:
            if row != index + 1:  # the delimiter row
                cells.extend(cell.strip() for cell in lines[row].strip().strip("|").split("|") if cell.strip())
            row += 1
        tables.append(cells)
        index = row
    return tables


def check_twin(html_markdown: str, twin: str, *, min_coverage: float = DEFAULT_MIN_COVERAGE) -> TwinCheck:
    """Whether ``twin`` may be stored in place of ``html_markdown`` (the page's extraction)."""
    twin_words = words(twin)
    if not twin_words:
        return TwinCheck(False, "empty", 0.0)
    html_sequence = _shingle_sequence(words(html_markdown))
    twin_shingles = set(_shingle_sequence(twin_words))
    html_shingles = set(html_sequence)
    coverage = (len(html_shingles & twin_shingles) / len(html_shingles)) if html_shingles else 1.0
    missing_run = _longest_missing_run(html_sequence, twin_shingles)
    # Sequences are compared with a space on each side, so "get" is not found inside "target".
    haystack = f" {' '.join(twin_words)} "
    missing_code = _missing_code(code_blocks(html_markdown), code_blocks(twin))
    missing_tables = sum(1 for cells in table_cells(html_markdown)
                         if not all(_holds(haystack, cell) for cell in cells))
    if missing_code:
        reason = "code"
    elif missing_tables:
        reason = "table"
    elif missing_run >= PASSAGE_WORDS:
        reason = "passage"
    elif coverage < min_coverage:
        reason = "coverage"
    else:
        return TwinCheck(True, "ok", coverage, missing_run=missing_run)
    return TwinCheck(False, reason, coverage, missing_code, missing_tables, missing_run)


def _missing_code(blocks: list[str], twin_blocks: list[str]) -> int:
    """How many of ``blocks`` no block of ``twin_blocks`` matches, each twin block matching one:
    the same words, or for a block of ``_CONTAINED_WORDS`` words or more, its words within the twin
    block's (a one-word command also occurs inside a longer block)."""
    remaining = [" ".join(words(block)) for block in twin_blocks]
    missing = 0
    for block in blocks:
        needle = " ".join(words(block))
        if not needle:
            continue
        found = next((i for i, other in enumerate(remaining) if other == needle), None)
        if found is None and needle.count(" ") + 1 >= _CONTAINED_WORDS:
            found = next((i for i, other in enumerate(remaining) if f" {needle} " in f" {other} "), None)
        if found is None:
            missing += 1
        else:
            del remaining[found]
    return missing


def _holds(haystack: str, text: str) -> bool:
    needle = " ".join(words(text))
    return not needle or f" {needle} " in haystack


def _shingle_sequence(sequence: list[str]) -> list[tuple[str, ...]]:
    if len(sequence) < SHINGLE:
        return [tuple(sequence)] if sequence else []
    return list(zip(*(sequence[offset:] for offset in range(SHINGLE)), strict=False))


def _longest_missing_run(sequence: list[tuple[str, ...]], present: set[tuple[str, ...]]) -> int:
    """The most consecutive words of ``sequence``'s text that no shingle of ``present`` covers
    (a run of ``n`` missing shingles is ``n + SHINGLE - 1`` words)."""
    longest = run = 0
    for shingle in sequence:
        run = 0 if shingle in present else run + 1
        longest = max(longest, run)
    return longest + SHINGLE - 1 if longest else 0
