"""The Markdown line grammar Harvester writes and reads: fenced code, ATX headings, pipe tables.

Extraction writes Markdown and tidies it, chunking splits it, frames re-level its headings and the
quality score counts its fences; all of them ask here whether a line opens or closes a fence or is
a heading, so no two of them can disagree about where code starts. The rules are CommonMark's,
with the containers our converters write before a fence (list items, block quotes, definition
list ``:``). Scrapy-free.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum

# A fence line: container markers (list item, block quote, definition), then ``` or ~~~ and an
# info string.
_FENCE = re.compile(r"^(?P<prefix>[ \t]*(?:(?:[*+-]|\d{1,9}[.)]|:|>)[ \t]+)*)(?P<marker>`{3,}|~{3,})(?P<info>.*)$")
# An ATX heading: up to three spaces, 1-6 #, then the text; a closing run of # needs a space
# before it (so "# C#" is the heading "C#").
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
# A pipe table's delimiter row: |---|:--:|
TABLE_DELIMITER = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")


@dataclass(frozen=True)
class Fence:
    """An opening fence: what stands before it, its marker (``` or ~~~, 3 or more) and info."""

    prefix: str
    marker: str
    info: str


class Line(Enum):
    TEXT = "text"
    FENCE = "fence"  # an opening or closing fence line
    CODE = "code"  # inside fenced code


def fence_opening(line: str) -> Fence | None:
    """The fence ``line`` opens, or None. A backtick fence whose info string holds a backtick is
    inline code, not a fence (CommonMark)."""
    if "```" not in line and "~~~" not in line:  # most lines: no regex
        return None
    match = _FENCE.match(line)
    if match is None:
        return None
    marker, info = match["marker"], match["info"]
    if marker[0] == "`" and "`" in info:
        return None
    return Fence(match["prefix"], marker, info.strip())


def fence_closes(line: str, opening: Fence) -> bool:
    """Whether ``line`` closes the fence ``opening``: the same character, at least as many, and
    nothing after it."""
    if opening.marker[:3] not in line:  # most lines of code: no regex
        return False
    match = _FENCE.match(line)
    return (
        match is not None
        and match["marker"][0] == opening.marker[0]
        and len(match["marker"]) >= len(opening.marker)
        and not match["info"].strip()
    )


def classify_lines(lines: Iterable[str]) -> Iterator[tuple[str, Line]]:
    """Each line with what it is: text, a fence line, or code inside a fence. An unclosed fence
    runs to the end."""
    opening: Fence | None = None
    for line in lines:
        if opening is not None:
            if fence_closes(line, opening):
                opening = None
                yield line, Line.FENCE
            else:
                yield line, Line.CODE
            continue
        opening = fence_opening(line)
        yield line, Line.FENCE if opening is not None else Line.TEXT


def heading(line: str) -> tuple[int, str] | None:
    """``(level, text)`` of an ATX heading line with text, else None (use only outside code)."""
    match = HEADING.match(line)
    if match is None or not (match.group(2) or "").strip():
        return None
    return len(match.group(1)), match.group(2).strip()


def is_table_start(lines: list[str], index: int) -> bool:
    """Whether a pipe table starts at ``lines[index]`` (a row, then a delimiter row)."""
    return (
        index + 1 < len(lines)
        and "|" in lines[index]
        and "|" in lines[index + 1]
        and bool(TABLE_DELIMITER.match(lines[index + 1]))
    )
