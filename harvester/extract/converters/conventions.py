r"""The project's Markdown conventions, which every converter follows.

* headings are ATX (``#``), never setext, so every heading level survives;
* ``<pre>`` becomes one fenced block whose fence is longer than any backtick
  run inside it, with the language the extractor stored in ``data-lang``;
  inside a table cell it degrades to an inline code span so the row stays on
  one line (:func:`fenced_code`);
* ``|`` inside table cells is escaped as ``\|`` so GFM pipe tables keep their
  columns (:func:`table_cell`);
* line breaks use a backslash, so stripping trailing spaces later is safe;
* besides ``*`` and ``_``, literal ``[``, ``]``, ``<`` and ``\`` in prose are
  escaped so they cannot form links or raw HTML (never inside code,
  :func:`escape_prose`).

:func:`tidy_markdown` normalises blank lines and trailing whitespace outside
code fences (code is left byte-exact); :func:`visible_text` is the rough plain
text that length checks and scoring read.
"""
from __future__ import annotations

import re

from harvester.markdown.grammar import Line, classify_lines

__all__ = ["DISSOLVED", "escape_prose", "fenced_code", "table_cell", "tidy_markdown", "visible_text"]

_BACKTICK_RUN = re.compile(r"`{3,}")
_PIPE = re.compile(r"(?<!\\)\|")
# A backslash that would escape the next character must itself be escaped.
_ESCAPABLE_BACKSLASH = re.compile(r"\\(?=[!-/:-@\[-`{-~])")
_HTML_LIKE = re.compile(r"<(?=[A-Za-z/!?])")
_LEADING_BLANK_LINES = re.compile(r"^(?:[ \t]*\n)+")
# The tag both converters write as its bare text (markdownify has no rule for it) and so dissolve
# into the text around it while they read the tree: highlighting and cross-reference markup
# (Sphinx's <code><span class="pre">, API signatures) is a third of a docs page's tags.
DISSOLVED = "span"


def escape_prose(text: str) -> str:
    """Escape prose text for Markdown: ``*`` and ``_`` (as markdownify does), a backslash that
    would escape the next character, and literal brackets and ``<`` ("Optional[Deferred]",
    "(<https://...>)" in changelogs, "<div>"), which would otherwise turn into links or raw HTML.
    Never ``-``, ``#``, ``+`` or digits (markdownify's ``escape_misc`` would mangle those)."""
    if not text:
        return ""
    # Each step only where its character occurs: this runs on every text of every page.
    if "\\" in text:
        text = _ESCAPABLE_BACKSLASH.sub(r"\\\\", text)
    if "*" in text:
        text = text.replace("*", r"\*")
    if "_" in text:
        text = text.replace("_", r"\_")
    if "[" in text or "]" in text:
        # "](" left in prose would still read as a link opener to lenient
        # parsers ("[#2249](<https://...>)" typed in a changelog).
        text = text.replace("[", r"\[").replace("]", r"\]").replace(r"\](", r"\]\(")
    if "<" in text:
        text = _HTML_LIKE.sub(r"\\<", text)
    return text


def fenced_code(text: str, lang: str, inline: bool) -> str:
    """A ``<pre>``'s converted text as one fenced block, the fence longer than any backtick run
    inside; in a table cell (``inline``) an inline code span, since a fence cannot live there."""
    if not text.strip():
        return ""
    if inline:
        code = " ".join(line.strip() for line in text.splitlines() if line.strip())
        ticks = "``" if "`" in code else "`"
        return f" {ticks}{code}{ticks} "
    code = text.strip("\n").rstrip()
    # Keep the first line's indentation but drop leading blank lines.
    code = _LEADING_BLANK_LINES.sub("", code)
    longest = max((len(m) for m in _BACKTICK_RUN.findall(code)), default=2)
    fence = "`" * max(3, longest + 1)
    return f"\n\n{fence}{lang}\n{code}\n{fence}\n\n"


def table_cell(text: str, colspan: str | None) -> str:
    """A converted ``<td>``/``<th>``: on one line, ``|`` escaped, one ``|`` per spanned column."""
    span = 1
    if colspan and str(colspan).isdigit():
        span = max(1, min(1000, int(colspan)))
    text = " ".join(text.split())
    return " " + _PIPE.sub(r"\\|", text) + " |" * span


def tidy_markdown(md: str) -> str:
    """Collapse runs of blank lines, strip trailing whitespace and zero-width
    characters outside fenced code, and end with exactly one newline."""
    out: list[str] = []
    blank = 0
    in_code = False
    for line, kind in classify_lines(md.replace("\r\n", "\n").replace("\r", "\n").split("\n")):
        if in_code:  # code and its closing fence stay exactly as they are
            out.append(line)
            in_code = kind is Line.CODE
            continue
        in_code = kind is Line.FENCE
        line = line.replace("\u200b", "").replace("\ufeff", "").rstrip()
        if not line:
            blank += 1
            if blank > 1 or not out:
                continue
        else:
            blank = 0
        out.append(line)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out) + "\n" if out else ""


# Possessive: what the repetitions take is never whitespace or ")", which is all that may follow
# them, so giving any of it back cannot make a match; not trying is a third of visible_text's time.
_LINK_TARGET = re.compile(r"\]\((?:[^()\s]++|\([^)\s]*+\))*+(?:\s+\"[^\"]*\")?\)")
_MARKUP = re.compile(r"[#*_`|>\\\[\]!-]+")


def visible_text(md: str) -> str:
    """Rough plain text of Markdown (link targets and markup characters
    dropped, whitespace collapsed); used for length checks and scoring."""
    text = _LINK_TARGET.sub("]", md)
    text = _MARKUP.sub(" ", text)
    return " ".join(text.split())
