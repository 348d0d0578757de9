"""Main element -> Markdown straight from the lxml tree: the default converter ("lxml").

It writes exactly what :class:`harvester.extract.converters.markdownify.DocMarkdownConverter`
(markdownify with the project's options and overrides) writes for the same element -- the tests
hold the two equal on every page of three real docs sites and on thousands of random trees --
but walks the lxml element itself. Why not markdownify: it needs a BeautifulSoup tree (built node
by node from lxml, since re-parsing serialised HTML cost more), and runs generic per-node
machinery on it (a converter looked up by name, a parent-context set copied, whitespace rules
re-derived from bs4 siblings). On docs pages with thousands of elements, building the soup and
walking it dominated extraction; this walk does the same work without them.

The rules are markdownify 1.2's, restated for this walk:

* the children of an element are its text and child elements with ``<span>`` dissolved into the
  text around them, adjacent texts joined (as the soup was built);
* whitespace-only text next to a block element, or at the inner edge of one, is dropped; text is
  whitespace-collapsed outside ``<pre>``, escaped outside code, and trimmed at block edges;
* child results are joined with at most two newlines between them (not inside ``<pre>``);
* each element's text is then wrapped by the rule for its tag (headings, paragraphs, lists,
  definition lists, tables, links, emphasis, code...), tags without a rule pass their text on.

The shared pieces (prose escaping, fenced code, table cells) are the functions of
:mod:`harvester.extract.converters.conventions` that the markdownify subclass uses too.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from harvester.extract.converters.conventions import (
    DISSOLVED,
    escape_prose,
    fenced_code,
    table_cell,
    tidy_markdown,
)

__all__ = ["element_to_markdown"]

_BLOCK = frozenset({"p", "blockquote", "article", "div", "section", "ol", "ul", "li", "dl", "dt", "dd",
                    "table", "thead", "tbody", "tfoot", "tr", "td", "th"})
_HEADING = re.compile(r"h(\d+)")
_NEWLINE_RUN = re.compile(r"[\t \r\n]*[\r\n][\t \r\n]*")
_SPACE_RUN = re.compile(r"[\t ]+")
_ANY_SPACE_RUN = re.compile(r"[\t \r\n]+")
_BACKTICKS = re.compile(r"`+")
_DOCUMENT = "[document]"


# Where an element stands in the converted tree: (its parent, None above the root; the parent's
# children, texts and elements with spans dissolved; its index there; the parent's own place, for a
# table row, which looks at its section's siblings). A plain tuple: one is made per element.
Place = tuple


def element_to_markdown(root) -> str:
    """Convert a cleaned lxml element (and its descendants) to Markdown, as
    ``converters.markdownify.element_to_markdown`` does with markdownify. The element is not
    modified."""
    return tidy_markdown(_Walk(root).run())


def _dissolve(span, kids: list, pending: str) -> str:
    """Add a span's content to ``kids`` as if the span were not there; the text still pending."""
    if span.text:
        pending += span.text
    for child in span:
        tag = child.tag
        if tag == DISSOLVED:
            pending = _dissolve(child, kids, pending)
        elif isinstance(tag, str):
            if pending:
                kids.append(pending)
                pending = ""
            kids.append(child)
        if child.tail:
            pending += child.tail
    return pending


def _children(el) -> list:
    """``el``'s texts and child elements, spans dissolved and adjacent texts joined; comments and
    processing instructions leave their tails only."""
    kids: list = []
    pending = el.text or ""
    for child in el:
        tag = child.tag
        if tag.__class__ is str and tag != DISSOLVED:
            if pending:
                kids.append(pending)
                pending = ""
            kids.append(child)
        elif tag == DISSOLVED:
            pending = _dissolve(child, kids, pending)
        if child.tail:
            pending += child.tail
    if pending:
        kids.append(pending)
    return kids


_block_names: dict[str, bool] = {}


def _is_block(name: str) -> bool:
    """markdownify's "remove whitespace inside": block elements and headings."""
    known = _block_names.get(name)
    if known is None:
        known = _block_names[name] = name in _BLOCK or _HEADING.match(name) is not None
    return known


def _trims_around(node) -> bool:
    """markdownify's "remove whitespace outside": a block element, a heading or ``<pre>``."""
    if node is None or node.__class__ is str:
        return False
    return node.tag == "pre" or _is_block(node.tag)


def _split_newlines(text: str) -> tuple[str, str, str]:
    """(leading newlines, content, trailing newlines)."""
    content = text.lstrip("\n")
    if not content:
        return text, "", ""
    inner = content.rstrip("\n")
    return text[: len(text) - len(content)], inner, content[len(inner):]


def _chomp(text: str) -> tuple[str, str, str]:
    return (" " if text[:1] == " " else "", " " if text[-1:] == " " else "", text.strip())


def _prefix_lines(text: str, prefix: str, empty: str) -> str:
    return "\n".join(prefix + line if line else empty for line in text.split("\n"))


class _Walk:
    def __init__(self, root) -> None:
        self.root = root
        self._child_tags: dict[tuple[frozenset, str], frozenset] = {}

    def run(self) -> str:
        text = self._element(self.root, frozenset({_DOCUMENT}), (None, [self.root], 0, None))
        return self._join([text] if text else [], in_pre=False).strip("\n")

    def _tags_below(self, parent_tags: frozenset, name: str) -> frozenset:
        extra = {name}
        if _HEADING.match(name) is not None or name in ("td", "th"):
            extra.add("_inline")
        if name in ("pre", "code", "kbd", "samp"):
            extra.add("_noformat")
        tags = self._child_tags[(parent_tags, name)] = parent_tags | extra
        return tags

    def _element(self, el, parent_tags: frozenset, place: Place) -> str:
        name = el.tag
        kids = _children(el)
        below = self._child_tags.get((parent_tags, name)) or self._tags_below(parent_tags, name)
        strings = []
        if kids:
            block = _is_block(name)
            last = len(kids) - 1
            for i, kid in enumerate(kids):
                if kid.__class__ is str:
                    before = kids[i - 1] if i else None
                    after = kids[i + 1] if i < last else None
                    if not kid.strip():
                        if block and (before is None or after is None):
                            continue
                        if _trims_around(before) or _trims_around(after):
                            continue
                    out = _text(kid, below, block, before, after)
                else:
                    out = self._element(kid, below, (el, kids, i, place))
                if out:
                    strings.append(out)
        text = self._join(strings, in_pre=name == "pre" or "pre" in parent_tags)
        rule = _RULES.get(name)
        if rule is None:
            heading = _HEADING.match(name)
            if heading is None:
                return text
            return _heading(int(heading.group(1)), text, parent_tags)
        return rule(self, el, text, parent_tags, place)

    @staticmethod
    def _join(strings: list[str], in_pre: bool) -> str:
        if in_pre:
            return "".join(strings)
        if len(strings) < 2:
            return strings[0] if strings else ""
        parts = [""]
        for string in strings:
            if string[0] != "\n" and string[-1] != "\n":  # most strings: no newline at either end
                parts += ("", string, "")
                continue
            leading, content, trailing = _split_newlines(string)
            if parts[-1] and leading:
                leading = "\n" * min(2, max(len(parts.pop()), len(leading)))
            parts += (leading, content, trailing)
        return "".join(parts)


def _text(text: str, parent_tags: frozenset, in_block: bool, before, after) -> str:
    if "pre" not in parent_tags and ("\n" in text or "\r" in text or "\t" in text or "  " in text):
        text = _SPACE_RUN.sub(" ", _NEWLINE_RUN.sub("\n", text))
    if "_noformat" not in parent_tags:
        text = escape_prose(text)
    if (in_block and before is None) or _trims_around(before):
        text = text.lstrip(" \t\r\n")
    if (in_block and after is None) or _trims_around(after):
        text = text.rstrip()
    return text


# -------------------------------------------------------------------- rules per tag

Rule = Callable[[_Walk, Any, str, frozenset, Place], str]


def _heading(level: int, text: str, parent_tags: frozenset) -> str:
    if "_inline" in parent_tags:
        return text
    text = _ANY_SPACE_RUN.sub(" ", text.strip())
    return f"\n\n{'#' * max(1, min(6, level))} {text}\n\n"


def _inline(write: Callable[[Any, str, str, str], str]) -> Rule:
    """A rule for inline markup: the text as it is inside code, nothing when it is blank, else
    ``write(element, leading space, trailing space, stripped text)``."""
    def rule(walk, el, text, parent_tags, place):
        if "_noformat" in parent_tags:
            return text
        prefix, suffix, text = _chomp(text)
        return write(el, prefix, suffix, text) if text else ""
    return rule


def _emphasis(mark: str) -> Rule:
    return _inline(lambda el, prefix, suffix, text: f"{prefix}{mark}{text}{mark}{suffix}")


@_inline
def _link(el, prefix, suffix, text):
    href = el.get("href")
    title = el.get("title")
    if text.replace(r"\_", "_") == href and not title:
        return f"<{href}>"
    if not href:
        return text
    title_part = ' "{}"'.format(title.replace('"', r"\"")) if title else ""
    return f"{prefix}[{text}]({href}{title_part}){suffix}"


@_inline
def _code(el, prefix, suffix, text):
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    if longest:
        text = f" {text} "
    ticks = "`" * (longest + 1)
    return f"{prefix}{ticks}{text}{ticks}{suffix}"


def _blockquote(walk, el, text, parent_tags, place):
    text = text.strip(" \t\r\n")
    if "_inline" in parent_tags:
        return f" {text} "
    if not text:
        return "\n"
    return "\n" + _prefix_lines(text, "> ", ">") + "\n\n"


def _line_break(walk, el, text, parent_tags, place):
    if "_inline" in parent_tags:
        return text + " " if text else " "
    return "\\\n" + text


def _division(walk, el, text, parent_tags, place):
    if "_inline" in parent_tags:
        return f" {text.strip()} "
    text = text.strip()
    return f"\n\n{text}\n\n" if text else ""


def _definition(walk, el, text, parent_tags, place):
    text = text.strip()
    if "_inline" in parent_tags:
        return f" {text} "
    if not text:
        return "\n"
    text = _prefix_lines(text, "    ", "")
    return ":" + text[1:] + "\n"


def _term(walk, el, text, parent_tags, place):
    text = _ANY_SPACE_RUN.sub(" ", text.strip())
    if "_inline" in parent_tags:
        return f" {text} "
    return f"\n\n{text}\n" if text else "\n"


def _rule_line(walk, el, text, parent_tags, place):
    return "\n\n---\n\n"


def _image(walk, el, text, parent_tags, place):
    if not el.get("src"):  # an image without a source carries nothing but its alt text
        return el.get("alt") or ""
    alt = el.get("alt") or ""
    if "_inline" in parent_tags:
        return alt
    title = el.get("title") or ""
    title_part = ' "{}"'.format(title.replace('"', r"\"")) if title else ""
    return f"![{alt}]({el.get('src')}{title_part})"


def _video(walk, el, text, parent_tags, place):
    if "_inline" in parent_tags:
        return text
    src = el.get("src") or ""
    if not src:
        source = next((s for s in el.iter("source") if s is not el and s.get("src") is not None), None)
        if source is not None:
            src = source.get("src") or ""
    poster = el.get("poster") or ""
    if src and poster:
        return f"[![{text}]({poster})]({src})"
    if src:
        return f"[{text}]({src})"
    if poster:
        return f"![{text}]({poster})"
    return text


def _list(walk, el, text, parent_tags, place):
    _, siblings, index, _ = place
    following = next((s for s in siblings[index + 1:] if not isinstance(s, str) or s.strip()), None)
    before_paragraph = following is not None and (isinstance(following, str) or following.tag not in ("ul", "ol"))
    if "li" in parent_tags:
        return "\n" + text.rstrip()
    return "\n\n" + text + ("\n" if before_paragraph else "")


def _list_item(walk, el, text, parent_tags, place):
    text = text.strip()
    if not text:
        return "\n"
    parent, siblings, index, _ = place
    if parent is not None and parent.tag == "ol":
        start = parent.get("start")
        # isdecimal, not markdownify's isnumeric: int() refuses "½", on which markdownify fails.
        first = int(start) if start and start.isdecimal() else 1
        earlier = sum(1 for s in siblings[:index] if not isinstance(s, str) and s.tag == "li")
        bullet = f"{first + earlier}. "
    else:
        bullet = "- "
    text = _prefix_lines(text, " " * len(bullet), "")
    return bullet + text[len(bullet):] + "\n"


def _paragraph(walk, el, text, parent_tags, place):
    if "_inline" in parent_tags:
        return " " + text.strip(" \t\r\n") + " "
    text = text.strip(" \t\r\n")
    return f"\n\n{text}\n\n" if text else ""


def _pre(walk, el, text, parent_tags, place):
    return fenced_code(text, (el.get("data-lang") or "").strip(), "_inline" in parent_tags)


def _quote(walk, el, text, parent_tags, place):
    return f'"{text}"'


def _nothing(walk, el, text, parent_tags, place):
    return ""


def _table(walk, el, text, parent_tags, place):
    return "\n\n" + text.strip() + "\n\n"


def _caption(walk, el, text, parent_tags, place):
    return text.strip() + "\n\n"


def _figcaption(walk, el, text, parent_tags, place):
    return "\n\n" + text.strip() + "\n\n"


def _cell(walk, el, text, parent_tags, place):
    return table_cell(text, el.get("colspan"))


def _descendants(walk: _Walk, node, *names: str) -> list:
    """Elements named ``names`` below ``node``; below None (the document): the root and below."""
    if node is None:
        return list(walk.root.iter(*names))
    return [d for d in node.iter(*names) if d is not node]


def _previous_element(place: Place) -> Any:
    _, siblings, index, _ = place
    return next((s for s in reversed(siblings[:index]) if not isinstance(s, str)), None)


def _row(walk, el, text, parent_tags, place):
    cells = _descendants(walk, el, "td", "th")
    parent, _, _, up = place
    parent_name = _DOCUMENT if parent is None else parent.tag
    first_row = _previous_element(place) is None
    head_row = all(cell.tag == "th" for cell in cells) or (
        parent_name == "thead" and len(_descendants(walk, parent, "tr")) == 1)
    head_missing = first_row and (
        parent_name != "tbody"
        or not _descendants(walk, up[0], "thead"))
    columns = 0
    for cell in cells:
        span = cell.get("colspan")
        columns += max(1, min(1000, int(span))) if span and span.isdigit() else 1
    over = under = ""
    if (head_row or head_missing) and first_row:
        under = "| " + " | ".join(["---"] * columns) + " |\n"
    elif first_row and (parent_name == "table"
                        or (parent_name == "tbody" and _previous_element(up) is None)):
        over = "| " + " | ".join([""] * columns) + " |\n" + "| " + " | ".join(["---"] * columns) + " |\n"
    return over + "|" + text + "\n" + under


_RULES: dict[str, Rule] = {
    "a": _link,
    "b": _emphasis("**"), "strong": _emphasis("**"),
    "em": _emphasis("*"), "i": _emphasis("*"),
    "del": _emphasis("~~"), "s": _emphasis("~~"),
    "sub": _emphasis(""), "sup": _emphasis(""),
    "code": _code, "kbd": _code, "samp": _code,
    "blockquote": _blockquote,
    "br": _line_break,
    "div": _division, "article": _division, "section": _division, "dl": _division,
    "dd": _definition,
    "dt": _term,
    "hr": _rule_line,
    "img": _image,
    "video": _video,
    "ul": _list, "ol": _list, "list": _list,
    "li": _list_item,
    "p": _paragraph,
    "pre": _pre,
    "q": _quote,
    "script": _nothing, "style": _nothing,
    "table": _table,
    "caption": _caption,
    "figcaption": _figcaption,
    "td": _cell, "th": _cell,
    "tr": _row,
}
