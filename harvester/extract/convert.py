"""HTML main element -> Markdown for documentation pages: what every converter shares.

* **Pre-conversion rewrites** on the cleaned lxml main element, shared by
  every converter: :func:`prepare_code` (one flat ``<pre>`` per code block),
  :func:`rewrite_admonitions` (note/warning/version boxes -> ``<blockquote>``
  opening with a bold label, which every converter renders as
  ``> **Note:** ...``), :func:`rewrite_signatures` (API entry signatures ->
  ``<code>``) and :func:`unwrap_heading_anchors`.
* **Converters**: a registry name -> function(lxml element) -> Markdown.
  ``"lxml"`` (the default, :mod:`harvester.extract.tree_markdown`) and
  ``"markdownify"`` (:mod:`harvester.extract.markdownify_converter`) write the
  same Markdown; ``"html-to-markdown"`` is registered lazily when
  ``harvester.extract.htmd`` exists. Each is imported when first selected.
* The project's Markdown conventions the first two share:

  * headings are ATX (``#``), never setext, so every heading level survives;
  * ``<pre>`` becomes one fenced block whose fence is longer than any backtick
    run inside it, with the language the extractor stored in ``data-lang``;
    inside a table cell it degrades to an inline code span so the row stays on
    one line (:func:`fenced_code`);
  * ``|`` inside table cells is escaped as ``\\|`` so GFM pipe tables keep their
    columns (:func:`table_cell`);
  * line breaks use a backslash, so stripping trailing spaces later is safe;
  * besides ``*`` and ``_``, literal ``[``, ``]``, ``<`` and ``\\`` in prose are
    escaped so they cannot form links or raw HTML (never inside code,
    :func:`escape_prose`).

* :func:`tidy_markdown` normalises blank lines and trailing whitespace outside
  code fences (code is left byte-exact); :func:`visible_text`.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
from typing import Callable

import lxml.html
from lxml import etree

from harvester.fetch.encoding import clean_text
from harvester.markdown.grammar import Line, classify_lines

__all__ = [
    "DEFAULT_CONVERTER",
    "DISSOLVED",
    "available_converters",
    "escape_prose",
    "fenced_code",
    "get_converter",
    "prepare_code",
    "register_converter",
    "rewrite_admonitions",
    "rewrite_signatures",
    "table_cell",
    "tidy_markdown",
    "unwrap_heading_anchors",
    "visible_text",
]

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
    keep the words, drop link-only glyphs such as '#', '¶' or '§'."""
    for a in _heading_links(main):
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
    (lxml main element) -> Markdown, already passed through :func:`tidy_markdown`
    (extract_page does not tidy it again). Loading lazily keeps optional packages
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


def _module_converter(module: str) -> Callable[[], Converter]:
    """A loader of ``module``'s ``element_to_markdown``. By name: the converter modules import
    this one for what they share."""
    def load() -> Converter:
        return importlib.import_module(module).element_to_markdown
    return load


DEFAULT_CONVERTER = "lxml"
register_converter("lxml", _module_converter("harvester.extract.tree_markdown"))
register_converter("markdownify", _module_converter("harvester.extract.markdownify_converter"))
available_converters()
