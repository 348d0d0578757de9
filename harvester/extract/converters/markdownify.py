"""Main element -> Markdown with markdownify: the ``"markdownify"`` converter, and the reference
the default converter (:mod:`harvester.extract.converters.lxml`) is tested against -- the two write
the same Markdown.

:class:`DocMarkdownConverter` sets markdownify's options for documentation (ATX headings,
backslash line breaks, ``-`` bullets, inferred table header rows) and overrides the few
conversions whose defaults lose structure on documentation sites, with the functions the tree
converter shares (:func:`~harvester.extract.converters.conventions.escape_prose`,
:func:`~harvester.extract.converters.conventions.fenced_code`, :func:`~harvester.extract.converters.conventions.table_cell`).
markdownify is fed a bs4 tree built directly from the extractor's lxml element instead of
re-parsing serialised HTML. Imported only when this converter is selected (bs4 and markdownify
are not loaded otherwise).
"""
from __future__ import annotations

from bs4 import BeautifulSoup, NavigableString, Tag
from markdownify import ATX, BACKSLASH, MarkdownConverter

from harvester.extract.converters.conventions import (
    DISSOLVED,
    escape_prose,
    fenced_code,
    table_cell,
    tidy_markdown,
)

__all__ = ["DocMarkdownConverter", "element_to_markdown"]


class DocMarkdownConverter(MarkdownConverter):
    """markdownify tuned for documentation: ATX headings, exact fenced code,
    pipe-safe tables. The reference for :mod:`harvester.extract.converters.lxml`, which writes the
    same Markdown straight from the lxml tree."""

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
        return escape_prose(text)

    def convert_pre(self, el, text, parent_tags):
        return fenced_code(text, (el.get("data-lang") or "").strip(), "_inline" in parent_tags)

    def convert_td(self, el, text, parent_tags):
        return table_cell(text, el.get("colspan"))

    def convert_th(self, el, text, parent_tags):
        return table_cell(text, el.get("colspan"))

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

    def fill(el, tag, texts: list[str]) -> None:
        """``el``'s content into ``tag``: its spans dissolved into the text around them, adjacent
        texts joined into one string."""
        if el.text:
            texts.append(el.text)
        for child in el:
            if child.tag == DISSOLVED:
                fill(child, tag, texts)
            elif isinstance(child.tag, str):
                if texts:
                    link(NavigableString("".join(texts)), tag)
                    texts.clear()
                add(child, tag)
            if child.tail:
                texts.append(child.tail)

    def add(el, parent) -> None:
        tag = _FastTag(name=el.tag, attrs=dict(el.attrib))
        link(tag, parent)
        texts: list[str] = []
        fill(el, tag, texts)
        if texts:
            link(NavigableString("".join(texts)), tag)

    add(root, soup)
    return soup
