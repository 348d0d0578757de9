r"""Main element -> Markdown with the Rust-core ``html-to-markdown`` package.

An alternative to the markdownify converter (:mod:`harvester.extract.converters.markdownify`)
with the same contract: ``convert(element)`` takes the (cleaned) main-content
lxml element and returns Markdown following the project's conventions:

* ATX headings only (``#``), never setext;
* one fenced block per outermost ``<pre>``, exact code whitespace, the fence
  longer than any backtick run inside, the language taken from ``data-lang``
  (what the extractor stores) or from ``language-x`` / ``highlight-x`` /
  ``lang-x`` classes on the block, its ``<code>`` or up to three wrappers;
* GFM pipe tables with ``|`` escaped inside cells;
* literal ``*``, ``_``, ``[``, ``]``, ``<`` (before a tag-like character) and
  ``\`` escaped in prose, never in code;
* links kept inline; images keep their alt text (a source-less image becomes
  its alt text).

Most of it is the library's own options (see ``_options``). What it does not
cover is done around it, each with the reason next to it:

* code blocks are flattened to their text before conversion (the library
  renders ``<a>`` inside ``<pre>`` as Markdown link syntax inside the fence,
  doubles fences for nested ``<pre>``, and only reads the language from
  ``language-x``/``lang-x`` classes on ``<pre>``/``<code>``, not from
  ``data-lang`` or Sphinx's ``highlight-x`` wrapper);
* ``[``, ``]``, ``<`` and ``\`` in prose go through placeholders (the library
  escapes only ``*``/``_`` -- or, with ``escape_misc``, nearly every
  punctuation mark, ``-``, ``.``, ``=``, ``&`` included);
* a blank line is forced before a blockquote that follows other content (the
  library writes "text\n> Note: ...", and two adjacent blockquotes -- two
  admonitions in a row -- merge into one);
* a source-less ``<img>`` becomes its alt text (the library writes
  ``![alt](<>)``);
* a lone ``---``/``===`` line of literal text right after a paragraph line is
  escaped (it would turn that paragraph into a setext heading; markdownify
  has the same gap);
* ``tidy_markdown`` normalises blank lines and trailing spaces as for
  markdownify.

The input element is never modified (a copy is converted). The library is
imported here; when it is missing, importing this module raises ImportError.
``element_to_markdown`` is the same function under the name the converter
registry of :mod:`harvester.extract.converters` loads ("html-to-markdown").
"""
from __future__ import annotations

import copy
import re

import lxml.html

try:
    import html_to_markdown as _h2m
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "harvester.extract.converters.html_to_markdown needs the 'html-to-markdown' package "
        "(pip install html-to-markdown); use the markdownify converter otherwise"
    ) from exc

from harvester.extract.converters.conventions import tidy_markdown
from harvester.extract.rewrites import code_language, remove_keep_tail
from harvester.markdown.grammar import Line, classify_lines

__all__ = ["convert", "element_to_markdown", "library_version"]

# Same rules as the extractor: "highlight-python" (Sphinx), "language-js"
# (Prism/highlight.js), "lang-sh"; the hyphen keeps "highlighttable" out.
_LEADING_BLANK_LINES = re.compile(r"^(?:[ \t]*\n)+")

# Private-use placeholders for prose characters the library leaves unescaped.
_PH_BS, _PH_LB, _PH_RB, _PH_LT = "\ue000", "\ue001", "\ue002", "\ue003"
_PROSE_NEEDS_ESCAPE = (
    ".//text()[(contains(., '[') or contains(., ']') or contains(., '<') or contains(., '\\'))"
    " and not(ancestor::pre or ancestor::code or ancestor::kbd or ancestor::samp or ancestor::tt)]"
)
_LT_TAGLIKE = re.compile(r"<(?=[A-Za-z/!?])")
# A placeholder backslash is escaped when the next character would otherwise
# be escaped by it (ASCII punctuation, including a backslash the library put
# in front of * or _, or another placeholder); elsewhere "\" is literal already.
_BS_BEFORE_PUNCT = re.compile(_PH_BS + r"(?=[!-/:-@\[-`{-~\ue000-\ue003])")

# Marks the spot before a blockquote; its line becomes a blank line.
_SENTINEL = "\ue010"
_SENTINEL_LINE = re.compile(r"^[ \t]*\ue010[ \t]*$", re.M)

_UNDERLINE = re.compile(r"^(?:=+|-+)[ \t]*$")
_UNDERLINE_ANYWHERE = re.compile(r"^(?:=+|-+)[ \t]*$", re.M)
# A line that opens a container or is no paragraph text: a following "---"
# is a list item, a thematic break or a table ruler, not a setext underline.
_NOT_PARAGRAPH = re.compile(r"^[ \t]*(?:[-*+](?:[ \t]|$)|>|\||#{1,6}(?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$))")


def library_version() -> str:
    try:
        from importlib.metadata import version
        return version("html-to-markdown")
    except Exception:  # pragma: no cover
        return getattr(_h2m, "__version__", "unknown")


def _options():
    return _h2m.ConversionOptions(
        heading_style="atx",            # never setext
        code_block_style="backticks",   # fenced, language after the fence
        bullets="-",
        strong_em_symbol="*",
        escape_asterisks=True,
        escape_underscores=True,
        escape_misc=False,              # would escape - . = & # + ... everywhere
        newline_style="backslash",      # trailing-space breaks would not survive tidying
        autolinks=True,                 # <url> when the text is the URL, as markdownify does
        compact_tables=True,            # no column padding: long cells would pad every row
        expand_abbreviations=False,     # no "(title)" noise after <abbr>
        include_blockquote_citations=False,
        highlight_style="none",         # <mark> is plain text, not ==x==
        extract_metadata=False,         # nothing of it is used; saves work
        # The extractor already removed chrome; the library's own
        # nav/form heuristics must not second-guess the main element.
        preprocessing=_h2m.PreprocessingOptions(enabled=False),
    )


_OPTIONS = _options()


def convert(element: lxml.html.HtmlElement) -> str:
    """Markdown for ``element`` and its descendants (its tail excluded)."""
    root = copy.deepcopy(element)
    root.tail = None
    _flatten_code(root)
    _images_without_source(root)
    _separate_blockquotes(root)
    _protect_prose(root)
    html = lxml.html.tostring(root, encoding="unicode", with_tail=False)
    md = _h2m.convert(html, _OPTIONS).content or ""
    md = _restore_prose(md)
    if _SENTINEL in md:
        md = _SENTINEL_LINE.sub("", md).replace(_SENTINEL, "")
    md = _guard_setext(md)
    return tidy_markdown(md)


# The name the converter registry (harvester.extract.converters) looks up
# (registered there as "html-to-markdown").
element_to_markdown = convert


# --------------------------------------------------------------------------
# Before conversion (on the copy)
# --------------------------------------------------------------------------

def _flatten_code(root) -> None:
    """Reduce every outermost <pre> to its exact text plus class="language-x".

    The library would render markup inside <pre> (links as [x](y), nested
    <pre> as a second fence inside the first) and does not see data-lang or
    a highlight-x wrapper, so it gets plain text and one language class.
    """
    for pre in root.xpath("descendant-or-self::pre[not(ancestor::pre)]"):
        lang = code_language(pre)
        if len(pre):
            for br in pre.iter("br"):
                br.tail = "\n" + (br.tail or "")
            text = pre.text_content()
        else:  # already flat (the extractor's output)
            text = pre.text or ""
        text = _LEADING_BLANK_LINES.sub("", text)
        tail = pre.tail
        if not text.strip():
            remove_keep_tail(pre)
            continue
        pre.clear()  # also drops attributes and the tail
        # html5ever drops one newline right after <pre>: protect a leading one.
        pre.text = "\n" + text if text.startswith("\n") else text
        pre.tail = tail
        if lang:
            pre.set("class", "language-" + lang)


def _images_without_source(root) -> None:
    # The library writes ![alt](<>) for an image without src; markdownify's
    # converter keeps only the alt text.
    for img in list(root.iter("img")):
        if (img.get("src") or "").strip() or img is root:
            continue
        alt = img.get("alt") or ""
        img.tail = alt + (img.tail or "")
        remove_keep_tail(img)


def _separate_blockquotes(root) -> None:
    r"""Put a sentinel paragraph before every blockquote that follows content.

    The library writes a blockquote right under a preceding paragraph or
    blockquote with no blank line ("text\n> Note: ..."): two adjacent
    blockquotes (two admonitions in a row) then read as one, and their
    paragraphs merge. The sentinel's line is blanked after conversion.
    """
    for bq in list(root.iter("blockquote")):
        if bq is root:
            continue
        parent = bq.getparent()
        if bq.getprevious() is None and not (parent.text or "").strip():
            continue  # first thing in its container: nothing to separate from
        if any(anc.tag in ("td", "th") for anc in bq.iterancestors("td", "th")):
            continue  # a table row must stay on one line
        mark = lxml.html.Element("p")
        mark.text = _SENTINEL
        bq.addprevious(mark)


def _protect_prose(root) -> None:
    r"""Swap [, ], tag-like < and \ in prose text for placeholders.

    The library leaves them literal, so "Optional[Deferred]" or "[x](y)"
    typed in prose would become a link and "<div>" raw HTML. Placeholders
    (private-use characters the library copies verbatim) are turned into the
    escaped forms after conversion; code, kbd, samp and tt are code spans
    there and are skipped.
    """
    # XPath returns libxml2 text *nodes*; after strip_tags() (the extractor
    # unwraps spans) one .text/.tail can be several adjacent nodes, so the
    # full .text/.tail of the owning element is rewritten, once.
    seen = set()
    for s in root.xpath(_PROSE_NEEDS_ESCAPE):
        parent, is_tail = s.getparent(), s.is_tail
        key = (id(parent), is_tail)
        if key in seen:
            continue
        seen.add(key)
        old = parent.tail if is_tail else parent.text
        new = _LT_TAGLIKE.sub(_PH_LT, old.replace("\\", _PH_BS).replace("[", _PH_LB).replace("]", _PH_RB))
        if new == old:
            continue
        if is_tail:
            parent.tail = new
        else:
            parent.text = new


# --------------------------------------------------------------------------
# After conversion
# --------------------------------------------------------------------------

def _restore_prose(md: str) -> str:
    if _PH_BS in md:
        md = _BS_BEFORE_PUNCT.sub(r"\\\\", md).replace(_PH_BS, "\\")
    if _PH_RB in md:
        # "](" would still read as a link opener to lenient parsers.
        md = md.replace(_PH_RB + "(", r"\]\(").replace(_PH_RB, r"\]")
    return md.replace(_PH_LB, r"\[").replace(_PH_LT, r"\<")


def _guard_setext(md: str) -> str:
    r"""Escape a literal "---"/"===" line that directly follows paragraph text.

    Neither converter escapes it (text such as "Title\n---" in a <div>), and
    CommonMark would read the pair as a setext heading.
    """
    if not _UNDERLINE_ANYWHERE.search(md):
        return md
    lines = md.split("\n")
    prev = ""
    for i, (line, kind) in enumerate(classify_lines(lines)):
        if kind is not Line.TEXT:
            prev = ""
            continue
        if _UNDERLINE.match(line) and prev.strip() and not _NOT_PARAGRAPH.match(prev):
            lines[i] = "\\" + line
        prev = line
    return "\n".join(lines)
