"""Pre-conversion rewrites on the cleaned lxml main element, shared by every converter.

* :func:`prepare_code`: one flat ``<pre>`` per code block, its language in ``data-lang``;
* :func:`rewrite_admonitions`: note/warning/version boxes -> ``<blockquote>`` opening with a bold
  label, which every converter renders as ``> **Note:** ...``;
* :func:`rewrite_signatures`: API entry signatures -> ``<code>``;
* :func:`unwrap_heading_anchors`: heading self-links keep their words, lose their glyphs.
"""
from __future__ import annotations

import re
from collections.abc import Callable

import lxml.html
from lxml import etree

from harvester.fetch.encoding import clean_text

__all__ = [
    "code_language",
    "prepare_code",
    "remove_keep_tail",
    "rewrite_admonitions",
    "rewrite_signatures",
    "unwrap_heading_anchors",
]


def _cls(name: str) -> str:
    return f"contains(concat(' ', normalize-space(@class), ' '), ' {name} ')"


# Code laid out as a table of a line-number gutter and the code: Pygments' highlighttable, Hexo's
# figure.highlight (td.gutter, td.code) and Rouge's rouge-table (td.rouge-gutter, td.rouge-code).
_GUTTER_CELL = " or ".join(_cls(name) for name in ("gutter", "linenos", "rouge-gutter", "line-numbers"))
_CODE_CELL_CLASS = f"({_cls('code')} or {_cls('rouge-code')})"
_HIGHLIGHT_TABLES = etree.XPath(
    f".//table[{_cls('highlighttable')} or (.//td[{_GUTTER_CELL}] and .//td[{_CODE_CELL_CLASS}]//pre)]")
_CODE_CELL = etree.XPath(f".//td[{_CODE_CELL_CLASS}]")
_OUTER_PRE = etree.XPath(".//pre[not(ancestor::pre)]")
# "highlight-python" (Sphinx), "language-js" (Prism/highlight.js/MkDocs),
# "lang-sh"; the hyphen is required so "highlighttable" is no language.
_LANG_CLASS = re.compile(r"^(?:highlight|language|lang)-([A-Za-z0-9_+#.-]+)$")
# rustdoc marks its blocks <pre class="rust">, without a prefix.
_BARE_LANG_CLASSES = frozenset({"rust"})
_LANG_ALIASES = {"default": "python", "python3": "python", "py": "python", "none": "", "text": "text",
                 "plain": "text", "plaintext": "text", "nohighlight": ""}


def prepare_code(main) -> None:
    """Flatten every outermost <pre> to its exact text and record its
    language in data-lang; nested <pre> and highlighting markup vanish, so
    markdownify emits exactly one fence per block."""
    for table in _HIGHLIGHT_TABLES(main):
        # Line-number tables: keep only the code cell.
        code = _CODE_CELL(table)
        if code:
            holder = lxml.html.Element("div")
            holder.extend(list(code[0]))
            holder.tail = table.tail
            lang = _figure_language(table.getparent())
            table.getparent().replace(table, holder)
            for pre in holder.iter("pre"):
                if lang and not code_language(pre):
                    pre.set("data-lang", lang)
    for pre in _OUTER_PRE(main):
        lang = code_language(pre)
        for br in pre.iter("br"):
            br.tail = "\n" + (br.tail or "")
        # The tree can hold control characters lxml refuses to set again (a \x0c in Python source).
        # Javadoc spaces its signatures with &nbsp; and hints line breaks with zero-width spaces: a
        # browser copies them as spaces and nothing, which is what a compiler accepts.
        text = clean_text(pre.text_content()).replace("\u200b", "").replace("\xa0", " ")
        tail = pre.tail
        pre.clear()
        pre.text = text
        pre.tail = tail
        if lang:
            pre.set("data-lang", lang)


def _figure_language(box) -> str:
    """The language Hexo names beside "highlight" on a code figure (``figure.highlight.js``)."""
    classes = (box.get("class") or "").split() if box is not None else []
    if "highlight" not in classes:
        return ""
    others = [c for c in classes if c != "highlight"]
    return _lang_alias(others[0]) if len(others) == 1 else ""


def code_language(pre) -> str:
    """Language from the block or its wrappers (Sphinx highlight-X on the
    grandparent, language-X on <pre>/<code>, data-lang attributes)."""
    nodes = [pre] + pre.xpath("./code[1]") + list(pre.iterancestors())[:3]
    for node in nodes:
        for attr in ("data-lang", "data-language"):
            if node.get(attr):
                return _lang_alias(node.get(attr))
        for c in (node.get("class") or "").split():
            m = _LANG_CLASS.match(c)
            if m:
                return _lang_alias(m.group(1))
            if c in _BARE_LANG_CLASSES and node is pre:
                return c
    return ""


def _lang_alias(name: str) -> str:
    name = name.strip().lower()
    name = _LANG_ALIASES.get(name, name)
    # A fence info string cannot contain a backtick or whitespace.
    return re.sub(r"[`\s]", "", name)


# Label words of admonition kinds, for boxes without a title element
# (Docsy "alert-warning", Docusaurus "theme-admonition-tip", GitBook "hint-info").
_KIND_LABELS = {
    "note": "Note", "warning": "Warning", "tip": "Tip", "hint": "Hint", "important": "Important",
    "caution": "Caution", "danger": "Danger", "attention": "Attention", "error": "Error", "info": "Info",
    "seealso": "See also", "todo": "Todo", "success": "Success", "question": "Question", "example": "Example",
    "abstract": "Abstract", "bug": "Bug", "failure": "Failure", "quote": "Quote", "versionadded": "Added",
    "versionchanged": "Changed", "deprecated": "Deprecated", "primary": "Note", "secondary": "Note",
    "details": "Details",
}


def rewrite_admonitions(main, boxes: Callable, titles: Callable | None = None) -> None:
    """Turn admonition boxes into ``<blockquote>`` whose first paragraph
    opens with ``<strong>Label:</strong>``; the body (text, lists, code)
    stays inside the quote.

    ``boxes``/``titles`` are compiled selectors (callables element -> list).
    The label is the box's own title element (removed, its tail kept), else
    a kind word from its classes, else "Note".
    """
    found = [b for b in boxes(main) if b is not main and b.tag not in ("p", "span", "a", "li", "pre", "code")]
    if not found:
        return
    box_set = set(found)
    title_of = _own_titles(main, titles, box_set) if titles is not None else {}
    for box in found:
        title = title_of.get(box)
        label = _label_text(title) if title is not None else ""
        if title is not None:
            remove_keep_tail(title)
        label = label or _kind_label(box)
        _unwrap_layout_table(box)
        _to_blockquote(box, label)


def _unwrap_layout_table(box) -> None:
    """A box laid out as a small table (AsciiDoc's icon cell beside the text, DocBook's admonition
    graphics) keeps its cells' content, not a table: the cells with text become divs in its place."""
    children = [c for c in box if isinstance(c.tag, str)]
    if len(children) != 1 or children[0].tag != "table" or (box.text or "").strip():
        return
    table = children[0]
    rows = table.xpath("./tr | ./tbody/tr")
    if not rows or len(rows) > 2 or table.xpath("./thead"):
        return
    if any(len([c for c in row if c.tag in ("td", "th")]) > 2 for row in rows):
        return
    kept = [cell for row in rows for cell in row if cell.tag in ("td", "th") and cell.text_content().strip()]
    for cell in kept:
        cell.attrib.clear()
        cell.tag = "div"
        cell.tail = None
        table.addprevious(cell)
    remove_keep_tail(table)


def _own_titles(main, titles: Callable, box_set: set) -> dict:
    """Map each box to its first title element not inside a nested box."""
    out: dict = {}
    for t in titles(main):
        for anc in t.iterancestors():
            if anc in box_set:
                out.setdefault(anc, t)
                break
            if anc is main:
                break
    return out


def _label_text(title) -> str:
    label = " ".join(title.text_content().split()).strip().rstrip(":.").strip()
    # Themes upper/lower-case labels in the DOM ("TIP", "note") and style them with CSS.
    if label and (label.isupper() or label.islower()) and len(label.split()) <= 2:
        label = label.capitalize()
    return label


def _kind_label(box) -> str:
    tokens = (box.get("class") or "").split() + [box.get("data-hint-style") or ""]
    for tok in tokens:
        for part in (tok, tok.rsplit("-", 1)[-1]):
            if part.lower() in _KIND_LABELS:
                return _KIND_LABELS[part.lower()]
    return "Note"


def _to_blockquote(box, label: str) -> None:
    tail = box.tail
    box.attrib.clear()
    box.tag = "blockquote"
    box.tail = tail
    strong = lxml.html.Element("strong")
    strong.text = label + ":"
    holder = _lead_paragraph(box)
    if holder is None:
        holder = lxml.html.Element("p")
        box.insert(0, holder)
    strong.tail = " " + (holder.text or "").lstrip() if (holder.text or "").strip() else " "
    holder.text = None
    holder.insert(0, strong)


def _lead_paragraph(box):
    """The element whose text opens the box: the box itself when it starts
    with bare text, its first <p> (looking through wrapper divs), or None."""
    node = box
    while True:
        if (node.text or "").strip():
            return node if node is not box or not len(box) or box[0].tag not in _BLOCK_TAGS else None
        # Icon wrappers (GitBook hints, Docusaurus) hold no text: look past them.
        first = next((c for c in node if isinstance(c.tag, str) and (c.text_content().strip() or c.tag == "pre")),
                     None)
        if first is None:
            return node if node is not box else None
        if first.tag == "p":
            return first
        if first.tag in ("div", "section") and not first.get("class", "").startswith("highlight"):
            node = first
            continue
        return None


_BLOCK_TAGS = frozenset({"p", "div", "pre", "ul", "ol", "dl", "table", "blockquote", "section", "h1", "h2",
                         "h3", "h4", "h5", "h6"})


def remove_keep_tail(el) -> None:
    """Remove ``el`` and its subtree but keep the text that follows it (lxml's ``drop_tree`` for
    any element, not only lxml.html ones)."""
    parent = el.getparent()
    if parent is None:
        return
    tail = el.tail
    if tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = clean_text((prev.tail or "") + tail)
        else:
            parent.text = clean_text((parent.text or "") + tail)
    parent.remove(el)


def _is_source_link(a) -> bool:
    """Sphinx viewcode "[source]" and rustdoc "Source" links."""
    cls = a.get("class") or ""
    if "viewcode" in cls or "src" in cls.split() or "srclink" in cls:
        return True
    return a.get("href", "").startswith(("_modules/", "../_modules/")) or "/_modules/" in a.get("href", "")


def rewrite_signatures(main, signatures: Callable) -> None:
    """Render API entry signatures as code: a ``<dt>``/heading gets one
    ``<code>`` with the signature's text (so "class flask.Flask(import_name,
    ...)" reads as code, not as escaped emphasis), a block element becomes a
    ``<pre>``. "[source]" links stay after the code span."""
    for el in signatures(main):
        if el is main or el.getparent() is None:
            continue
        extras = [a for a in el.iter("a") if _is_source_link(a)]
        for a in extras:
            a.getparent().remove(a)
        text = clean_text(" ".join(el.text_content().split()))
        if not text:
            continue
        tail = el.tail
        del el[:]  # one C call; removing child by child builds a proxy per span
        el.text = None
        if el.tag in ("div", "section", "pre"):
            el.tag = "pre"
            el.attrib.pop("class", None)
            el.text = text
        else:
            code = lxml.html.Element("code")
            code.text = text
            el.append(code)
            for a in extras:
                a.tail = None
                el[-1].tail = " "
                el.append(a)
        el.tail = tail


_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


def _heading_links(main) -> list:
    """The links inside the headings below ``main``, in document order, each once (as the XPath
    ``.//h1//a|...|.//h6//a`` finds them, which took 2.5 times as long: six scans and a union)."""
    found, seen = [], set()
    for heading in main.iter(*_HEADINGS):
        if heading is main:
            continue
        for a in heading.iter("a"):
            if a not in seen:  # a heading inside another's
                seen.add(a)
                found.append(a)
    return found


def unwrap_heading_anchors(main) -> None:
    """Heading self-links (mdBook's ``a.header``, hugo-book's ``a.anchor``):
    keep the words, drop link-only glyphs such as '#', '¶' or '§', and words only a screen reader
    reads ("Link to heading" in a ``sr-only`` span, Hugo Coder's)."""
    for a in _heading_links(main):
        if not (a.get("href") or "").startswith("#"):
            continue
        if any(c.isalnum() for c in _shown_text(a)):
            a.drop_tag()
        else:
            a.drop_tree()


# Bootstrap's, Tailwind's and WordPress's classes for text that only screen readers read.
_SCREEN_READER_ONLY = frozenset({"sr-only", "visually-hidden", "screen-reader-text"})


def _shown_text(el) -> str:
    """``el``'s text less what only a screen reader reads."""
    parts = [el.text or ""]
    for child in el:
        if isinstance(child.tag, str) and _SCREEN_READER_ONLY.isdisjoint((child.get("class") or "").split()):
            parts.append(_shown_text(child))
        parts.append(child.tail or "")
    return "".join(parts)
