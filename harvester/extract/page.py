"""Main-content extraction for documentation pages (Scrapy-free).

``extract_page(html, url)`` turns one HTML page into an :class:`ExtractedPage`:
the main content as Markdown plus page metadata (title, language,
description, breadcrumbs, canonical URL, headings, generator) and a rough
quality score. This module parses and orchestrates; the knowledge about generators lives
in :mod:`harvester.extract.profiles`, the steps in :mod:`~harvester.extract.metadata`,
:mod:`~harvester.extract.main_element`, :mod:`~harvester.extract.cleaning` and
:mod:`~harvester.extract.quality`, and the HTML -> Markdown rules in
:mod:`harvester.extract.rewrites` and :mod:`harvester.extract.converters`.

Strategy, best first:

1. **Main element.** A caller's ``content_selector``, else the main element
   of the detected generator profile (Sphinx themes, MkDocs, Docusaurus,
   VitePress, mdBook, GitBook, DocBook, Hugo/Docsy, rustdoc, Javadoc); with a
   profile the whole-page heuristics are skipped. Otherwise generic
   candidates (schema.org ``articleBody``, ``[role=main]``, ``main``, a single
   ``article``). The element is cleaned of the profile's chrome (noise,
   breadcrumbs, pager, version switcher, TOC), its admonitions become
   labelled blockquotes and API signatures code, and it is converted with
   the selected converter (markdownify's rules, written from the lxml tree by
   default), which keeps code blocks,
   tables and heading levels intact -- trafilatura's own Markdown loses
   about half the fences and breaks tables on such sites.
2. **trafilatura** on the whole document when no main element exists
   (unknown sites, blogs).
3. **Plain text** of the body (``degraded=True``) as the last resort.

The document is parsed once with lxml (or not at all when the caller passes
the tree it already has as ``doc``); the converter then only sees the small,
cleaned main fragment. Nothing is shared between calls except compiled
selectors and a memo of joined link URLs (answers of a pure function), so it
is safe to run in worker threads.
"""
from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import lxml.html
from lxml import etree

from harvester.extract.article import (
    declares_article,
    drop_emptied,
    drop_hidden,
    drop_media,
    drop_title,
    drop_title_heading,
    drop_trailing_headings,
    narrow_article,
    prune_article,
    prune_link_blocks,
    prune_teasers,
    text_lengths,
    trim_article_edges,
    trim_link_tail,
)
from harvester.extract.cleaning import DROP_TAGS, absolutize_links, prepare_main
from harvester.extract.converters import DEFAULT_CONVERTER, get_converter
from harvester.extract.converters.conventions import tidy_markdown, visible_text
from harvester.extract.main_element import (
    first_with_text,
    generic_candidates,
    named_container,
    scan_document,
)
from harvester.extract.metadata import (
    base_url,
    element_headings,
    heading_anchors,
    markdown_headings,
    page_metadata,
    profile_breadcrumbs,
    scanned_breadcrumbs,
)
from harvester.extract.parser import document_fromstring
from harvester.extract.profiles import GENERIC, PageView, compile_css, detect_profile
from harvester.extract.quality import DEFAULT_MIN_CHARS, quality_score
from harvester.fetch.encoding import BINARY_SHARE, UNSAFE_TEXT, clean_text, composed_text

__all__ = ["ExtractedPage", "NoContent", "check_text", "extract_page", "parse_html", "template_scope"]


@dataclass(frozen=True)
class ExtractedPage:
    title: str
    markdown: str
    lang: str | None
    description: str | None
    headings: list[dict] = field(default_factory=list)
    breadcrumbs: list[str] = field(default_factory=list)
    canonical_url: str | None = None
    quality: float = 0.0
    degraded: bool = False
    # Name of the detected generator profile ("sphinx-rtd", "docusaurus"...).
    generator: str | None = None
    # The article's author(s) and ISO 8601 dates, as the page states them (metadata.article_metadata).
    author: str | None = None
    published: str | None = None
    modified: str | None = None
    # ``(heading text, id)`` of the headings a URL fragment can point at (metadata.heading_anchors).
    anchors: list[tuple[str, str]] = field(default_factory=list)


class NoContent(Exception):
    """Raised with .reason (short snake_case str such as 'empty', 'too_short',
    'not_html', 'unparsable') when a page has no meaningful content."""

    def __init__(self, reason: str, detail: str = "", generator: str | None = None) -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        # For a page with some text, too little to keep: the generator profile that recognised it.
        self.generator = generator


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------

def extract_page(html: str, url: str, *, min_chars: int = DEFAULT_MIN_CHARS, content_selector: str | None = None,
                 doc=None, converter: str | None = DEFAULT_CONVERTER,
                 template: Callable[[lxml.html.HtmlElement], object] | None = None) -> ExtractedPage:
    """Extract the main content of one page as Markdown plus metadata.

    ``content_selector``: CSS selector of the main element; when it matches
    an element with text, that element is the content whatever the profile.
    ``doc``: the page already parsed by lxml (e.g. parsel's
    ``response.selector.root``); ``html`` is then not parsed again and the
    tree is modified in place. ``converter``: name registered in
    :mod:`harvester.extract.converters` (ValueError if unknown; None means
    the default, ``DEFAULT_CONVERTER``). ``template``: called with the document root once the page's
    metadata, breadcrumbs and main element are read and before anything is cleaned or converted,
    to remove the site's learned template (``harvester.extract.template``).

    Raises NoContent('not_html' | 'unparsable' | 'empty' | 'too_short').
    """
    convert = get_converter(converter or DEFAULT_CONVERTER)
    content_xpath = compile_css(content_selector) if content_selector else None
    root = _parse(html) if doc is None else doc.getroottree().getroot()
    _sanitize_tree(root, html)
    base = base_url(root, url)
    view = PageView(root)
    profile = detect_profile(view)
    meta = page_metadata(root, url)
    generator = profile.name if profile else None

    main = first_with_text(root, (content_xpath,)) if content_xpath is not None else None
    if main is None and profile is not None:
        main = first_with_text(root, [compile_css(sel) for sel in profile.main])
    named_main = main
    if main is not None:
        meta["breadcrumbs"] = profile_breadcrumbs(root, profile)
        if template is not None:
            template(root)
        candidates = [(main, True)]
    else:
        sc = scan_document(root)
        meta["breadcrumbs"] = scanned_breadcrumbs(sc)
        if template is not None and template(root):
            sc = scan_document(root)  # candidates may have gone with the template
        candidates = list(generic_candidates(sc))

    rules = profile or GENERIC
    article = rules is GENERIC and content_xpath is None
    links = article and declares_article(root, meta.get("published"))
    if not candidates and not links:
        container = named_container(root)
        if container is not None:
            candidates = [(container, False)]
    # Copies of generic candidates only: a profile's or a selector's main element leaves the page to
    # trafilatura only when it cleans to nothing, and copying it would cost every docs page.
    originals = _originals(candidates) if named_main is None else []
    for main, trusted in candidates:
        held = text_lengths(main) if article else None
        if article:
            narrow_article(main)
            prune_article(main)
            if links:
                drop_hidden(main)
                prune_link_blocks(main)
                prune_teasers(main)
                drop_media(main)
                trim_article_edges(main)
        anchors = heading_anchors(main)
        prepare_main(main, base, rules)
        if held is not None:
            drop_emptied(main, held)  # after the generic cleaning, which drops forms and buttons
        if links:
            # After the generic cleaning, which takes a header for chrome once it holds no heading.
            drop_title(main, meta["title"])
        md = convert(main)  # tidied by the converter (register_converter)
        headings = element_headings(main)
        if article:
            md, headings = _without_trailing_headings(md, headings)
        text = visible_text(md)
        if not text:
            continue
        if len(text) < min_chars and not trusted:
            continue
        if len(text) < min_chars:
            raise NoContent("too_short", f"{len(text)} chars", generator)
        return _page(meta, md, headings, degraded=False, generator=generator, text=text, anchors=anchors)

    _restore(originals)
    if links:
        drop_media(root)  # an article's photos are credits and captions here too
    absolutize_links(root, base)
    _inline_code_for_trafilatura(root)
    md = _trafilatura(root, url)
    if links:
        # From the Markdown: trafilatura finds the article by its title heading.
        md = trim_link_tail(drop_title_heading(md, meta["title"]))
    if article:
        md = drop_trailing_headings(md)
    text = visible_text(md)
    if len(text) >= min_chars:
        return _page(meta, md, markdown_headings(md), degraded=False, generator=generator, text=text)

    plain = _plain_text(root)
    plain_len = len(visible_text(plain))
    if plain_len >= min_chars:
        return _page(meta, plain, [], degraded=True, generator=generator)
    longest = max(len(text), plain_len)
    if not longest:
        raise NoContent("empty")
    raise NoContent("too_short", f"{longest} chars", generator)


def template_scope(root, content_selector: str | None = None):
    """The element a site's template is learned from and removed in (``harvester.extract.template``):
    the main element the extractor will keep when a content selector or a generator profile names
    one (chrome outside it never reaches the Markdown, so it need not be walked), else the whole
    document."""
    if content_selector:
        main = first_with_text(root, (compile_css(content_selector),))
        if main is not None:
            return main
    profile = detect_profile(PageView(root))
    if profile is not None:
        main = first_with_text(root, [compile_css(sel) for sel in profile.main])
        if main is not None:
            return main
    return root


# --------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------

_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)


def _parse(html: str | bytes) -> lxml.html.HtmlElement:
    if isinstance(html, bytes):
        html = html.decode("utf-8", "replace")
    if not html or not html.strip():
        raise NoContent("empty")
    check_text(html)
    html = clean_text(html)
    # lxml refuses str input that still carries an encoding declaration.
    html = _XML_DECL.sub("", html, count=1)
    try:
        doc = document_fromstring(html)
    except (etree.ParserError, ValueError) as exc:
        if "empty" in str(exc).lower():
            raise NoContent("empty") from exc
        raise NoContent("unparsable", str(exc)) from exc
    if doc is None:
        raise NoContent("empty")
    return doc


parse_html = _parse  # for callers that read the tree before extraction (the page classifier)

# Binary bodies decode to control and replacement characters, which text has a stray one of at most
# (harvester.fetch.encoding.BINARY_SHARE).
_BINARY = re.compile("[\x00-\x08\x0e-\x1f\ufffd]")


def check_text(html: str) -> None:
    """NoContent('not_html') unless ``html`` looks like markup: a body in another format served as
    HTML (JSON, a PDF under any label, binary garbage) never reaches the index."""
    head = html[:2048].lstrip("\ufeff \t\r\n\x00")
    if "<" not in html[:65536]:
        raise NoContent("not_html")
    if head.startswith(("{", "[", "%PDF")):
        raise NoContent("not_html")
    sample = html[:8192]
    if len(_BINARY.findall(sample)) > BINARY_SHARE * len(sample):
        raise NoContent("not_html", "binary")


# Numeric character references to characters XML cannot hold: lxml's parser decodes them.
_CONTROL_REF = re.compile(r"&#(?:[xX]0*(?:[0-8bcefBCEF]|1[0-9a-fA-F])|0*(?:[0-8]|1[124-9]|2\d|3[01]));")


def _sanitize_tree(root, html: str | bytes) -> None:
    """Drop control characters from the tree's text and attributes, so that text taken from it can
    be set on it again (lxml refuses control characters on assignment: "All strings must be XML
    compatible"). Only when the page's source can hold any."""
    if isinstance(html, str) and not (UNSAFE_TEXT.search(html) or _CONTROL_REF.search(html)):
        return
    for el in root.iter():
        if (isinstance(el.tag, str) or el.tag is etree.Comment) and el.text and UNSAFE_TEXT.search(el.text):
            el.text = clean_text(el.text)
        if el.tail and UNSAFE_TEXT.search(el.tail):
            el.tail = clean_text(el.tail)
        if isinstance(el.tag, str):
            for name, value in el.attrib.items():
                if UNSAFE_TEXT.search(value):
                    el.set(name, clean_text(value))


# --------------------------------------------------------------------------
# Fallbacks
# --------------------------------------------------------------------------

def _without_trailing_headings(md: str, headings: list[dict]) -> tuple[str, list[dict]]:
    """``drop_trailing_headings`` on a generic page's Markdown, and its headings less those it dropped."""
    kept = drop_trailing_headings(md)
    if kept == md:
        return md, headings
    dropped = Counter(map(_heading_key, markdown_headings(md))) - Counter(map(_heading_key, markdown_headings(kept)))
    remaining = []
    for found in reversed(headings):  # the page's last ones went
        key = _heading_key(found)
        if dropped[key]:
            dropped[key] -= 1
        else:
            remaining.append(found)
    return kept, remaining[::-1]


def _heading_key(found: dict) -> tuple[int, str]:
    return found["level"], "".join(filter(str.isalnum, visible_text(found["text"])))


def _originals(candidates: list[tuple[lxml.html.HtmlElement, bool]]) -> list[tuple[lxml.html.HtmlElement, lxml.html.HtmlElement]]:
    """A copy of each candidate that no other candidate holds, taken before any is cleaned."""
    elements = [element for element, _ in candidates]
    return [(element, copy.deepcopy(element)) for element in elements
            if not any(other in elements for other in element.iterancestors())]


def _restore(originals: list[tuple[lxml.html.HtmlElement, lxml.html.HtmlElement]]) -> None:
    """Put the candidates back as they came: when each was found too short after its cleaning (a
    blog engine that writes its post into ``<noscript>``), trafilatura gets the page, not what the
    cleaning left of it."""
    for element, original in originals:
        parent = element.getparent()
        if parent is not None:
            parent.replace(element, original)


def _inline_code_for_trafilatura(root) -> None:
    """Rewrite a page's inline code in the form trafilatura (2.3) renders whole: it drops the text
    after an element nested in ``<code>`` (``<code><a>AccessFileName</a></code> directive.`` loses
    " directive."), so the link goes outside the code and other markup inside it goes."""
    inline = [code for code in root.iter("code") if len(code) and next(code.iterancestors("pre"), None) is None]
    for code in inline:
        if not len(code):
            continue  # an inner <code> of one flattened before
        link = code[0]
        if len(code) == 1 and link.tag == "a" and not (code.text or "").strip() and not (link.tail or "").strip():
            # <code><a href>name</a></code> as <a href><code>name</code></a>: the link is kept.
            attributes = dict(link.attrib)
            link.attrib.clear()
            code.attrib.clear()
            code.attrib.update(attributes)
            code.tag, link.tag = "a", "code"
        else:
            etree.strip_tags(code, "*")


def _trafilatura(doc, url: str) -> str:
    """trafilatura's Markdown for pages without a known main element."""
    import trafilatura  # heavy import, only needed on unknown layouts

    try:
        md = trafilatura.extract(doc, url=url, output_format="markdown", include_tables=True,
                                 include_formatting=True, include_links=True, include_images=True,
                                 include_comments=False)
    except Exception:  # trafilatura raises assorted errors on odd trees
        return ""
    return tidy_markdown(md) if md else ""


_BLOCKISH = ("p", "div", "li", "tr", "br", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "dt", "dd",
             "section", "article", "table", "blockquote", "ul", "ol", "dl")


def _plain_text(doc) -> str:
    """Body text without scripts and page chrome, one block per paragraph."""
    body = doc.find("body")
    if body is None:
        return ""
    doomed = []
    for el in body.iter():
        if not isinstance(el.tag, str):
            continue
        ident = set((el.get("class") or "").lower().split()) | {(el.get("id") or "").lower()}
        if el.tag in DROP_TAGS or el.tag in ("header", "footer", "aside") \
                or not _CHROME_IDS.isdisjoint(ident) or not _CHROME_CLASSES.isdisjoint(ident):
            doomed.append(el)
    for el in doomed:
        el.drop_tree()
    for el in body.iter(*_BLOCKISH):
        # Blank lines around every block so "Acme<ul><li>Blog" stays apart.
        el.text = "\n\n" + (el.text or "")
        el.tail = "\n\n" + (el.tail or "")
    lines = [" ".join(line.split()) for line in body.text_content().split("\n")]
    text = "\n".join(lines).replace("*", r"\*").replace("_", r"\_")
    return tidy_markdown(text.strip("\n"))


# Common ids/classes of layout chrome; only used on the plain-text path, where
# no main element or extractor has already separated content from layout.
_CHROME_IDS = frozenset({"header", "footer", "sidebar", "side-bar", "menu", "nav", "navbar", "navigation",
                         "toc", "site-header", "site-footer", "masthead", "topbar", "left-sidebar",
                         "right-sidebar"})
_CHROME_CLASSES = frozenset({"sphinxsidebar", "related", "navheader", "navfooter", "md-footer", "breadcrumbs",
                             "breadcrumb", "wy-breadcrumbs", "rst-footer-buttons", "pagination-nav",
                             "theme-doc-footer", "searchbox", "skip-link", "edit-this-page"})


# --------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------

def _page(meta: dict, md: str, headings: list[dict], *, degraded: bool, generator: str | None,
          text: str | None = None, anchors: list[tuple[str, str]] | None = None) -> ExtractedPage:
    """``text``: ``visible_text(md)`` when the caller has it already."""
    title = meta["title"] or (headings[0]["text"] if headings else "")
    # JSON-LD and meta tags can carry what the tree could not (lone surrogates from JSON escapes).
    return ExtractedPage(
        title=_text(title),
        markdown=_text(md),
        lang=clean_text(meta["lang"]) if meta["lang"] else None,
        description=_text(meta["description"]) if meta["description"] else None,
        headings=[{**h, "text": _text(h["text"])} for h in headings],
        breadcrumbs=[_text(c) for c in meta["breadcrumbs"]],
        canonical_url=meta["canonical_url"],
        quality=quality_score(md, degraded, text),
        degraded=degraded,
        generator=generator,
        author=_text(meta["author"]) if meta.get("author") else None,
        published=meta.get("published"),
        modified=meta.get("modified"),
        anchors=[(_text(text), anchor) for text, anchor in anchors or ()],
    )


def _text(text: str) -> str:
    """Text as stored: safe characters, composed (``composed_text``)."""
    return composed_text(clean_text(text))
