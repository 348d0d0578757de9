"""HTML fragment -> Markdown for documentation pages.

The heavy lifting is markdownify; :class:`DocMarkdownConverter` only overrides
the few conversions whose defaults lose structure on documentation sites:

* headings are ATX (``#``), never setext, so every heading level survives;
* ``<pre>`` becomes one fenced block whose fence is longer than any backtick
  run inside it, with the language the extractor stored in ``data-lang``;
  inside a table cell it degrades to an inline code span so the row stays on
  one line;
* ``|`` inside table cells is escaped as ``\\|`` so GFM pipe tables keep their
  columns;
* line breaks use a backslash, so stripping trailing spaces later is safe;
* besides ``*`` and ``_``, literal ``[``, ``]``, ``<`` and ``\\`` in prose are
  escaped so they cannot form links or raw HTML (never inside code).

:func:`element_to_markdown` feeds markdownify a bs4 tree built directly from
the extractor's lxml element instead of re-parsing serialised HTML.

:func:`tidy_markdown` normalises blank lines and trailing whitespace outside
code fences (code is left byte-exact).
"""
from __future__ import annotations

import re

from bs4 import BeautifulSoup, NavigableString, Tag
from markdownify import ATX, BACKSLASH, MarkdownConverter

__all__ = ["DocMarkdownConverter", "element_to_markdown", "fragment_to_markdown", "tidy_markdown",
           "visible_text"]

_BACKTICK_RUN = re.compile(r"`{3,}")
_FENCE_LINE = re.compile(r"^[ \t]*(?:(?:[*+-]|\d{1,9}[.)]|:|>)[ \t]+)*(`{3,}|~{3,})")
_PIPE = re.compile(r"(?<!\\)\|")
# A backslash that would escape the next character must itself be escaped.
_ESCAPABLE_BACKSLASH = re.compile(r"\\(?=[!-/:-@\[-`{-~])")
_HTML_LIKE = re.compile(r"<(?=[A-Za-z/!?])")


class DocMarkdownConverter(MarkdownConverter):
    """markdownify tuned for documentation: ATX headings, exact fenced code,
    pipe-safe tables."""

    class Options(MarkdownConverter.DefaultOptions):
        heading_style = ATX
        newline_style = BACKSLASH
        bullets = "-"
        escape_asterisks = True
        escape_underscores = True
        escape_misc = False
        # A row without <th> still becomes a header row: GFM tables need one,
        # and an empty header row would only add noise.
        table_infer_header = True

    def escape(self, text, parent_tags):
        # markdownify escapes * and _ only (escape_misc would also mangle
        # '-', '#', '+', digits...). Literal brackets and '<' in prose
        # ("Optional[Deferred]", "(<https://...>)" in changelogs, "<div>")
        # would otherwise turn into links or raw HTML, so escape those too.
        if not text:
            return ""
        text = _ESCAPABLE_BACKSLASH.sub(r"\\\\", text)
        text = super().escape(text, parent_tags)
        # "](" left in prose would still read as a link opener to lenient
        # parsers ("[#2249](<https://...>)" typed in a changelog).
        text = text.replace("[", r"\[").replace("]", r"\]").replace(r"\](", r"\]\(")
        return _HTML_LIKE.sub(r"\\<", text)

    def convert_pre(self, el, text, parent_tags):
        if not text.strip():
            return ""
        lang = (el.get("data-lang") or "").strip()
        if "_inline" in parent_tags:
            # A fence cannot live inside a pipe-table cell.
            code = " ".join(line.strip() for line in text.splitlines() if line.strip())
            ticks = "``" if "`" in code else "`"
            return f" {ticks}{code}{ticks} "
        code = text.strip("\n").rstrip()
        # Keep the first line's indentation but drop leading blank lines.
        code = re.sub(r"^(?:[ \t]*\n)+", "", code)
        longest = max((len(m) for m in _BACKTICK_RUN.findall(code)), default=2)
        fence = "`" * max(3, longest + 1)
        return f"\n\n{fence}{lang}\n{code}\n{fence}\n\n"

    def _cell(self, el, text):
        colspan = 1
        raw = el.get("colspan")
        if raw and str(raw).isdigit():
            colspan = max(1, min(1000, int(raw)))
        text = " ".join(text.split())
        return " " + _PIPE.sub(r"\\|", text) + " |" * colspan

    def convert_td(self, el, text, parent_tags):
        return self._cell(el, text)

    def convert_th(self, el, text, parent_tags):
        return self._cell(el, text)

    def convert_img(self, el, text, parent_tags):
        # Images without a source carry nothing but their alt text.
        if not el.get("src"):
            return el.get("alt") or ""
        return super().convert_img(el, text, parent_tags)


class _FastTag(Tag):
    """bs4 Tag with name-only fast paths for the two lookups markdownify makes
    per element (find_parent('pre') on every tag, find_previous_siblings('li')
    for every ordered-list item). bs4's generic matcher builds a filter
    object per call, which made these the single largest cost on big pages."""

    def find_parent(self, name=None, attrs=None, **kwargs):
        if isinstance(name, str) and not attrs and not kwargs:
            node = self.parent
            while node is not None:
                if node.name == name:
                    return node
                node = node.parent
            return None
        return super().find_parent(name, attrs, **kwargs)

    def find_previous_siblings(self, name=None, attrs=None, string=None, limit=None, **kwargs):
        if isinstance(name, str) and not attrs and string is None and limit is None and not kwargs:
            out = []
            node = self.previous_sibling
            while node is not None:
                if getattr(node, "name", None) == name:
                    out.append(node)
                node = node.previous_sibling
            return out
        return super().find_previous_siblings(name, attrs, string, limit, **kwargs)


def element_to_markdown(root) -> str:
    """Convert a cleaned lxml element (and its descendants) to Markdown.

    A new converter per call: markdownify keeps a per-instance cache, and the
    extractor may run in several worker threads.
    """
    return tidy_markdown(DocMarkdownConverter().convert_soup(_soup_from_lxml(root)))


def fragment_to_markdown(fragment_html: str) -> str:
    """Convert an HTML fragment string to Markdown (parses it with bs4)."""
    soup = BeautifulSoup(fragment_html, "lxml", element_classes={Tag: _FastTag})
    return tidy_markdown(DocMarkdownConverter().convert_soup(soup))


def _soup_from_lxml(root) -> BeautifulSoup:
    """Build the bs4 tree markdownify walks straight from the lxml element.

    Written by hand because serialising the fragment and letting bs4
    re-parse it cost more than markdownify itself (bs4 runs Python callbacks
    per parser event); linking the nodes directly is ~2.5x cheaper and keeps
    the "parse once with lxml" promise. Only the navigation attributes that
    bs4's own tree builder maintains are set (parent, contents, siblings, and
    the document-order next/previous_element chain used by find_all).
    """
    soup = BeautifulSoup("", "lxml", element_classes={Tag: _FastTag})
    last = soup  # previous node in document order

    def link(node, parent):
        nonlocal last
        contents = parent.contents
        prev = contents[-1] if contents else None
        node.parent = parent
        node.previous_sibling = prev
        node.next_sibling = None
        if prev is not None:
            prev.next_sibling = node
        node.previous_element = last
        last.next_element = node
        node.next_element = None
        last = node
        contents.append(node)

    def add(el, parent) -> None:
        tag = _FastTag(name=el.tag, attrs=dict(el.attrib))
        link(tag, parent)
        if el.text:
            link(NavigableString(el.text), tag)
        for child in el:
            if isinstance(child.tag, str):
                add(child, tag)
            if child.tail:
                link(NavigableString(child.tail), tag)

    add(root, soup)
    return soup


def tidy_markdown(md: str) -> str:
    """Collapse runs of blank lines, strip trailing whitespace and zero-width
    characters outside fenced code, and end with exactly one newline."""
    out: list[str] = []
    fence: str | None = None
    blank = 0
    for line in md.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        m = _FENCE_LINE.match(line)
        if fence is not None:
            out.append(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not line[m.end():].strip():
                fence = None
            continue
        line = line.replace("\u200b", "").replace("\ufeff", "").rstrip()
        if m:
            fence = m.group(1)
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


_LINK_TARGET = re.compile(r"\]\((?:[^()\s]|\([^)\s]*\))*(?:\s+\"[^\"]*\")?\)")
_MARKUP = re.compile(r"[#*_`|>\\\[\]!-]+")


def visible_text(md: str) -> str:
    """Rough plain text of Markdown (link targets and markup characters
    dropped, whitespace collapsed); used for length checks and scoring."""
    text = _LINK_TARGET.sub("]", md)
    text = _MARKUP.sub(" ", text)
    return " ".join(text.split())
