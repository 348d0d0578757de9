r"""What a chunk is embedded with: its page title and heading path before its text.

A chunk such as "## Setup\n\nCall create_app()..." says little on its own; "Tutorial > Application
Setup" in front of it tells the model (and BM25) which page and section it belongs to. The payload
keeps text and heading path apart; only the embedded text carries both.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def context_line(title: str, heading_path: Sequence[str]) -> str:
    """``Title > Section > Subsection``, without repeating a heading equal to the title."""
    parts: list[str] = [title.strip()] if title and title.strip() else []
    for heading in heading_path:
        heading = heading.strip()
        if heading and (not parts or heading.casefold() != parts[-1].casefold()):
            parts.append(heading)
    return " > ".join(parts)


def embedding_text(context: str, text: str) -> str:
    """The text given to the embedding model and to the lexical index."""
    return f"{context}\n\n{text}" if context else text


def heading_paths(headings: Iterable[dict[str, Any]]) -> list[tuple[str, ...]]:
    """Every heading path of a page, from its ``[{level, text}]`` headings in document order."""
    stack: list[tuple[int, str]] = []
    paths: list[tuple[str, ...]] = []
    for heading in headings:
        level, text = int(heading.get("level", 1)), str(heading.get("text", ""))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
        paths.append(tuple(t for _, t in stack))
    return paths
