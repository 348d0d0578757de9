"""HTML fragment -> Markdown for documentation pages.

Three parts:

* **Pre-conversion rewrites** on the cleaned lxml main element, shared by
  every converter: :func:`prepare_code` (one flat ``<pre>`` per code block),
  :func:`rewrite_admonitions` (note/warning/version boxes -> ``<blockquote>``
  opening with a bold label, which every converter renders as
  ``> **Note:** ...``), :func:`rewrite_signatures` (API entry signatures ->
  ``<code>``) and :func:`unwrap_heading_anchors`.
* **Converters**: a registry name -> function(lxml element) -> Markdown.
  ``"markdownify"`` is built in; ``"html-to-markdown"`` is registered lazily
  when ``harvester.extract.htmd`` exists (its ``element_to_markdown``).
* The markdownify subclass and :func:`tidy_markdown` / :func:`visible_text`.

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

import importlib
import importlib.util
import re
from typing import Callable

import lxml.html
from bs4 import BeautifulSoup, NavigableString, Tag
from lxml import etree
from markdownify import ATX, BACKSLASH, MarkdownConverter

from harvester.fetch.encoding import clean_text
from harvester.markdown.grammar import Line, classify_lines

__all__ = [
    "DocMarkdownConverter",
    "available_converters",
    "element_to_markdown",
    "fragment_to_markdown",
    "get_converter",
    "prepare_code",
    "register_converter",
    "rewrite_admonitions",
    "rewrite_signatures",
    "tidy_markdown",
    "unwrap_heading_anchors",
    "visible_text",
]

_BACKTICK_RUN = re.compile(r"`{3,}")
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

    def fill(el, tag, texts: list[str]) -> None:
        """``el``'s content into ``tag``: its spans dissolved into the text around them, adjacent
        texts joined into one string."""
        if el.text:
            texts.append(el.text)
        for child in el:
            if child.tag in _DISSOLVED:
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


# Tags markdownify writes as their bare text (it has no converter for them), dissolved while the
# soup is built: highlighting and cross-reference markup (Sphinx's <code><span class="pre">, API
# signatures) is a third of a docs page's tags, and each tag costs a bs4 node and a converter call.
_DISSOLVED = frozenset({"span"})


# --------------------------------------------------------------------------
# Pre-conversion rewrites (lxml, converter-independent)
# --------------------------------------------------------------------------

def _cls(name: str) -> str:
    return f"contains(concat(' ', normalize-space(@class), ' '), ' {name} ')"


_HIGHLIGHT_TABLES = etree.XPath(f".//table[{_cls('highlighttable')}]")
_CODE_CELL = etree.XPath(f".//td[{_cls('code')}]")
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
        # Pygments line-number tables: keep only the code cell.
        code = _CODE_CELL(table)
        if code:
            holder = lxml.html.Element("div")
            holder.extend(list(code[0]))
            holder.tail = table.tail
            table.getparent().replace(table, holder)
    for pre in _OUTER_PRE(main):
        lang = code_language(pre)
        for br in pre.iter("br"):
            br.tail = "\n" + (br.tail or "")
        # The tree can hold control characters lxml refuses to set again (a \x0c in Python source).
        text = clean_text(pre.text_content())
        tail = pre.tail
        pre.clear()
        pre.text = text
        pre.tail = tail
        if lang:
            pre.set("data-lang", lang)


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
        _to_blockquote(box, label)


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


_HEADING_LINKS = etree.XPath(".//h1//a|.//h2//a|.//h3//a|.//h4//a|.//h5//a|.//h6//a")


def unwrap_heading_anchors(main) -> None:
    """Heading self-links (mdBook's ``a.header``, hugo-book's ``a.anchor``):
    keep the words, drop link-only glyphs such as '#', '¶' or '§'."""
    for a in _HEADING_LINKS(main):
        if not (a.get("href") or "").startswith("#"):
            continue
        if any(c.isalnum() for c in a.text_content()):
            a.drop_tag()
        else:
            a.drop_tree()


# --------------------------------------------------------------------------
# Converters
# --------------------------------------------------------------------------

Converter = Callable[[object], str]
_LOADERS: dict[str, Callable[[], Converter]] = {}
_HTMD_MODULE = "harvester.extract.htmd"


def register_converter(name: str, loader: Callable[[], Converter]) -> None:
    """Register ``loader``, called on selection, returning a function
    (lxml main element) -> Markdown. Loading lazily keeps optional packages
    optional until someone selects them."""
    _LOADERS[name] = loader


def _load_htmd() -> Converter:
    try:
        module = importlib.import_module(_HTMD_MODULE)
    except ImportError as exc:
        raise ValueError(f"converter 'html-to-markdown' is unavailable: {exc}") from exc
    fn = getattr(module, "element_to_markdown", None)
    if not callable(fn):
        raise ValueError(f"{_HTMD_MODULE} has no element_to_markdown(element) -> str")
    return fn


def _htmd_present() -> bool:
    try:
        return importlib.util.find_spec(_HTMD_MODULE) is not None
    except (ImportError, ValueError):
        return False


def available_converters() -> list[str]:
    """Names accepted by :func:`get_converter`."""
    if "html-to-markdown" not in _LOADERS and _htmd_present():
        register_converter("html-to-markdown", _load_htmd)
    return sorted(_LOADERS)


def get_converter(name: str) -> Converter:
    """The converter registered as ``name``; ValueError when unknown or when
    its optional dependency cannot be imported."""
    if name not in _LOADERS:
        available_converters()  # the htmd adapter may have appeared since import
    loader = _LOADERS.get(name)
    if loader is None:
        raise ValueError(f"unknown converter {name!r}; available: {', '.join(available_converters())}")
    return loader()


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


_LINK_TARGET = re.compile(r"\]\((?:[^()\s]|\([^)\s]*\))*(?:\s+\"[^\"]*\")?\)")
_MARKUP = re.compile(r"[#*_`|>\\\[\]!-]+")


def visible_text(md: str) -> str:
    """Rough plain text of Markdown (link targets and markup characters
    dropped, whitespace collapsed); used for length checks and scoring."""
    text = _LINK_TARGET.sub("]", md)
    text = _MARKUP.sub(" ", text)
    return " ".join(text.split())


register_converter("markdownify", lambda: element_to_markdown)
available_converters()
