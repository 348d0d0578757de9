"""Main-content extraction for documentation pages (Scrapy-free).

``extract_page(html, url)`` turns one HTML page into an :class:`ExtractedPage`:
the main content as Markdown plus page metadata (title, language,
description, breadcrumbs, canonical URL, headings, generator) and a rough
quality score. This module orchestrates; the knowledge about generators lives
in :mod:`harvester.extract.profiles` and the HTML -> Markdown rules in
:mod:`harvester.extract.convert`.

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

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from urllib.parse import urljoin

import lxml.html
from lxml import etree

from harvester.extract.convert import (
    DEFAULT_CONVERTER,
    get_converter,
    prepare_code,
    remove_keep_tail,
    rewrite_admonitions,
    rewrite_signatures,
    tidy_markdown,
    unwrap_heading_anchors,
    visible_text,
)
from harvester.extract.parser import document_fromstring
from harvester.extract.profiles import GENERIC, PageView, Profile, compile_css, detect_profile
from harvester.fetch.encoding import BINARY_SHARE, UNSAFE_TEXT, clean_text
from harvester.markdown.grammar import Line, classify_lines, heading
from harvester.urls.links import BoundedCache, join_key, relative_to_page

__all__ = ["ExtractedPage", "NoContent", "check_text", "detect_profile", "extract_page", "parse_html",
           "template_scope"]


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


class NoContent(Exception):
    """Raised with .reason (short snake_case str such as 'empty', 'too_short',
    'not_html', 'unparsable') when a page has no meaningful content."""

    def __init__(self, reason: str, detail: str = "", generator: str | None = None) -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        # For a page with some text, too little to keep: the generator profile that recognised it.
        self.generator = generator


# --------------------------------------------------------------------------
# Generic cleaning rules (generator-specific ones live in the profiles)
# --------------------------------------------------------------------------

_UNTRUSTED_RANK = 10

# Elements that never carry article text.
_DROP_TAGS = frozenset({
    "script", "style", "noscript", "template", "nav", "button", "svg", "form", "iframe", "object",
    "embed", "input", "select", "textarea", "canvas", "dialog", "link", "meta", "title", "head",
})
_DROP_ROLES = frozenset({"navigation", "search", "banner", "contentinfo", "complementary"})
# A cookie/consent word next to a widget word ("cookie-banner",
# "cookieconsent", "gdpr-notice") or a known consent vendor. A bare "cookies"
# is not enough: Sphinx ids such as "requests.cookies.RequestsCookieJar" or
# "set-cookie-options" name content about cookies.
_COOKIE_RE = re.compile(
    r"(?:cookie|consent|gdpr)[\w-]*?(?:banner|bar|notice|popup|pop-up|modal|notification|dialog|overlay"
    r"|law|accept|alert|disclaimer|consent|window)"
    r"|(?:banner|notice|popup|modal|dialog|overlay)[\w-]*?(?:cookie|consent|gdpr)"
    r"|onetrust|cookiebot|\bcc-(?:window|banner)", re.I)
_COOKIE_WORDS = ("cookie", "consent", "gdpr", "onetrust", "cc-")
_COOKIE_HINT = re.compile("|".join(_COOKIE_WORDS), re.IGNORECASE)
_EDIT_TEXTS = frozenset({
    "edit this page", "edit on github", "edit on gitlab", "edit on bitbucket", "view page source",
    "show source", "show page source", "improve this page", "suggest an edit", "edit page",
    "view source", "report an issue",
})
_EDIT_WORDS = tuple(sorted({text.split()[0] for text in _EDIT_TEXTS}))
# Inline chrome that must go before <span>s are unwrapped and code is
# flattened (or its text would stay behind): line numbers, permalink and
# copy widgets. Shared by many generators, so not tied to a profile.
_INLINE_CHROME_CLASSES = frozenset({
    "linenos", "lineno", "linenodiv", "headerlink", "copybtn", "md-clipboard", "hash-link",
    "line-numbers-rows", "copy-button",
})
_NOISE_ATTRS = (
    "class", "id", "title", "style", "role", "itemprop", "itemscope", "itemtype", "rel", "target",
    "tabindex", "accesskey", "width", "height", "align", "valign", "border", "lang", "dir", "name",
    "loading", "decoding", "hidden", "aria-hidden", "aria-label", "aria-labelledby", "aria-controls",
    "aria-selected", "aria-expanded", "data-toggle", "data-target", "srcset", "sizes", "cellpadding",
    "cellspacing", "frame", "rules", "summary", "headers", "scope", "translate", "spellcheck",
)
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_HEADING_XPATH = etree.XPath("boolean(.//h1|.//h2|.//h3|.//h4|.//h5|.//h6)")
# Inline wrappers with no Markdown meaning. Sphinx wraps every code token in a
# <span>; unwrapping them in C halves the nodes the converter has to walk.
_UNWRAP_TAGS = ("span", "font", "abbr", "bdi", "small", "big", "ins", "mark", "wbr", "data", "time")
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)
_TITLE_SEPARATORS = (" — ", " – ", " | ", " - ", " · ", " :: ", " » ")
# Fallback breadcrumb containers for profiles that name none of their own.
_GENERIC_CRUMBS = ("nav[aria-label=breadcrumb]", "nav[aria-label=Breadcrumb]", "nav[aria-label=breadcrumbs]",
                   "nav[aria-label=Breadcrumbs]", "[itemtype$=BreadcrumbList]")


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------

def extract_page(html: str, url: str, *, min_chars: int = 80, content_selector: str | None = None,
                 doc=None, converter: str | None = DEFAULT_CONVERTER,
                 template: Callable[[lxml.html.HtmlElement], object] | None = None) -> ExtractedPage:
    """Extract the main content of one page as Markdown plus metadata.

    ``content_selector``: CSS selector of the main element; when it matches
    an element with text, that element is the content whatever the profile.
    ``doc``: the page already parsed by lxml (e.g. parsel's
    ``response.selector.root``); ``html`` is then not parsed again and the
    tree is modified in place. ``converter``: name registered in
    :mod:`harvester.extract.convert` (ValueError if unknown; None means
    the default, ``DEFAULT_CONVERTER``). ``template``: called with the document root once the page's
    metadata, breadcrumbs and main element are read and before anything is cleaned or converted,
    to remove the site's learned template (``harvester.extract.template``).

    Raises NoContent('not_html' | 'unparsable' | 'empty' | 'too_short').
    """
    convert = get_converter(converter or DEFAULT_CONVERTER)
    content_xpath = compile_css(content_selector) if content_selector else None
    root = _parse(html) if doc is None else doc.getroottree().getroot()
    _sanitize_tree(root, html)
    base = _base_url(root, url)
    view = PageView(root)
    profile = detect_profile(view)
    meta = _metadata(root, url)
    generator = profile.name if profile else None

    main = _first_with_text(root, (content_xpath,)) if content_xpath is not None else None
    if main is None and profile is not None:
        main = _first_with_text(root, [compile_css(sel) for sel in profile.main])
    if main is not None:
        meta["breadcrumbs"] = _breadcrumbs(root, profile)
        if template is not None:
            template(root)
        candidates = [(main, True)]
    else:
        sc = _scan(root)
        meta["breadcrumbs"] = _scan_breadcrumbs(sc)
        if template is not None and template(root):
            sc = _scan(root)  # candidates may have gone with the template
        candidates = _candidates(sc)

    rules = profile or GENERIC
    for main, trusted in candidates:
        _prepare_main(main, base, rules)
        md = convert(main)  # tidied by the converter (register_converter)
        text = visible_text(md)
        if not text:
            continue
        if len(text) < min_chars and not trusted:
            continue
        if len(text) < min_chars:
            raise NoContent("too_short", f"{len(text)} chars", generator)
        return _page(meta, md, _headings(main), degraded=False, generator=generator, text=text)

    _absolutize(root, base)
    md = _trafilatura(root, url)
    text = visible_text(md)
    if len(text) >= min_chars:
        return _page(meta, md, _md_headings(md), degraded=False, generator=generator, text=text)

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
        main = _first_with_text(root, (compile_css(content_selector),))
        if main is not None:
            return main
    profile = detect_profile(PageView(root))
    if profile is not None:
        main = _first_with_text(root, [compile_css(sel) for sel in profile.main])
        if main is not None:
            return main
    return root


def _first_with_text(root, xpaths):
    for xp in xpaths:
        for el in xp(root):
            if _has_text(el):
                return el
    return None


# --------------------------------------------------------------------------
# Parsing and metadata
# --------------------------------------------------------------------------

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
        if isinstance(el.tag, str) or el.tag is etree.Comment:
            if el.text and UNSAFE_TEXT.search(el.text):
                el.text = clean_text(el.text)
        if el.tail and UNSAFE_TEXT.search(el.tail):
            el.tail = clean_text(el.tail)
        if isinstance(el.tag, str):
            for name, value in el.attrib.items():
                if UNSAFE_TEXT.search(value):
                    el.set(name, clean_text(value))


def _base_url(doc, url: str) -> str:
    head = doc.find("head")
    href = head.xpath("string(base/@href)").strip() if head is not None else ""
    return (_absolute(url, href) or url) if href else url


# Zero-width characters that themes put in headings (VitePress's header anchors) are not whitespace
# to str.split(), so they would keep an h1 from matching its <title>.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"), " ")


def _norm(s: str | None) -> str:
    return " ".join((s or "").translate(_INVISIBLE).split())


def _metadata(doc, url: str) -> dict:
    # <title>, <meta> and <link> live in <head>: searching only there keeps
    # this cheap on 1 MB API pages.
    head = doc.find("head")
    metas: dict[str, str] = {}
    title_text = canonical = ""
    if head is not None:
        title_el = head.find("title")
        title_text = _norm(title_el.text_content()) if title_el is not None else ""
        for m in head.iter("meta"):
            key = (m.get("name") or m.get("property") or m.get("http-equiv") or "").strip().lower()
            if key and key not in metas and m.get("content"):
                metas[key] = m.get("content").strip()
        for ln in head.iter("link"):
            if "canonical" in (ln.get("rel") or "").lower().split() and ln.get("href"):
                canonical = ln.get("href").strip()
                break
    # Themes that set the site's name in an <h1> of their header put the page's own h1 second.
    h1s = [_norm(el.text_content()).replace("¶", "").strip() for el in islice(doc.iter("h1"), 3)]
    lang = (doc.get("lang") or doc.get("{http://www.w3.org/XML/1998/namespace}lang")
            or metas.get("content-language") or metas.get("og:locale") or "").strip()
    desc = metas.get("description") or metas.get("og:description") or metas.get("twitter:description")
    return {
        "title": _pick_title(title_text, h1s),
        "lang": lang or None,
        "description": _norm(desc) or None,
        "canonical_url": _absolute(url, canonical) if canonical else None,
        "breadcrumbs": [],
    }


def _pick_title(title_text: str, h1s: list[str]) -> str:
    """<title> minus the site suffix when the prefix is clearly the page name
    (it matches one of the first h1s); otherwise the <title>, else the first h1."""
    if title_text and h1s:
        for sep in _TITLE_SEPARATORS:
            if sep in title_text:
                head = title_text.rsplit(sep, 1)[0].strip()
                if head and any(head.casefold() == h1.casefold() for h1 in h1s):
                    return head
    return title_text or next((h1 for h1 in h1s if h1), "")


def _absolute(base: str, href: str) -> str | None:
    try:
        return urljoin(base, href)
    except ValueError:
        return None


def _breadcrumbs(root, profile: Profile | None) -> list[str]:
    """Trail from schema.org JSON-LD, else the profile's breadcrumb markup,
    else common breadcrumb containers."""
    crumbs = _crumbs_jsonld(el for el in root.iter("script") if el.get("type") == "application/ld+json")
    if crumbs:
        return crumbs
    selectors = (profile.breadcrumbs if profile else ()) + _GENERIC_CRUMBS
    for sel in selectors:
        for box in compile_css(sel)(root):
            crumbs = _crumbs_microdata(box) if "BreadcrumbList" in (box.get("itemtype") or "") else []
            crumbs = crumbs or _crumbs_html(box)
            if crumbs:
                return crumbs
    return []


def _scan_breadcrumbs(sc: "_Scan") -> list[str]:
    """Breadcrumbs for pages without a profile main element: JSON-LD or
    microdata, else the best-ranked breadcrumb-looking container."""
    found = sc.crumbs
    crumbs = _crumbs_jsonld(sc.scripts)
    if crumbs:
        return crumbs
    for el in found:
        if "BreadcrumbList" in (el.get("itemtype") or ""):
            crumbs = _crumbs_microdata(el)
            if crumbs:
                return crumbs
    boxes = sorted(((r, i, el) for i, el in enumerate(found) if (r := _crumb_rank(el)) is not None),
                   key=lambda t: (t[0], t[1]))
    for _, _, box in boxes:
        crumbs = _crumbs_html(box)
        if crumbs:
            return crumbs
    return []


def _crumb_rank(el) -> int | None:
    classes = set((el.get("class") or "").split())
    if el.tag == "nav" and "breadcrumb" in (el.get("aria-label") or "").lower():
        return 0
    if classes & {"breadcrumbs", "breadcrumb"}:
        return 1
    return None


def _crumbs_jsonld(scripts) -> list[str]:
    for script in scripts:
        try:
            data = json.loads(script.text or "")
        except (ValueError, TypeError):
            continue
        for obj in _walk_json(data):
            if obj.get("@type") == "BreadcrumbList":
                items = sorted((i for i in obj.get("itemListElement") or [] if isinstance(i, dict)),
                               key=lambda i: i.get("position") or 0)
                names = []
                for i in items:
                    name = i.get("name")
                    if not name and isinstance(i.get("item"), dict):
                        name = i["item"].get("name")
                    if isinstance(name, str) and _norm(name):
                        names.append(_norm(name))
                if names:
                    return names
    return []


def _walk_json(data):
    if isinstance(data, dict):
        yield data
        for v in data.values():
            yield from _walk_json(v)
    elif isinstance(data, list):
        for v in data:
            yield from _walk_json(v)


def _crumbs_microdata(lst) -> list[str]:
    names = [_norm(n.text_content() or n.get("content")) for n in lst.xpath(".//*[@itemprop='name']")]
    return [n for n in names if n]


def _crumbs_html(box) -> list[str]:
    items = [li for li in box.iter("li") if not _inner_li(li, box)] or list(box.iter("a"))
    names = []
    for li in items:
        classes = set((li.get("class") or "").split())
        # Sphinx's related bar mixes the trail with index/next/prev links
        # (class "right"); RTD appends a "View page source" aside.
        if classes & {"right", "wy-breadcrumbs-aside"}:
            continue
        text = _norm(li.text_content())
        if not text:
            # RTD's home crumb is an icon link with only an aria-label.
            a = li if li.tag == "a" else li.find(".//a")
            text = _norm(a.get("aria-label") or a.get("title")) if a is not None else ""
        text = text.strip("»›>/|· ").strip()
        if text:
            names.append(text)
    return names


def _inner_li(li, box) -> bool:
    for anc in li.iterancestors():
        if anc is box:
            return False
        if anc.tag == "li":
            return True
    return False



# --------------------------------------------------------------------------
# Main element without a profile: generic candidates
# --------------------------------------------------------------------------

@dataclass
class _Scan:
    """Elements of interest found in one pass over the document."""
    mains: list = field(default_factory=list)
    crumbs: list = field(default_factory=list)
    scripts: list = field(default_factory=list)


# Tags that can be a main element or a breadcrumb container. Iterating only
# these (a C-level filter) skips the thousands of <span>s of highlighted
# code; a Python pass over them beats one XPath with several contains().
_SCAN_TAGS = ("div", "main", "article", "nav", "ul", "ol", "section", "script")


def _scan(doc) -> _Scan:
    sc = _Scan()
    for el in doc.iter(*_SCAN_TAGS):
        tag = el.tag
        cls = el.get("class") or ""
        if tag == "script":
            if el.get("type") == "application/ld+json":
                sc.scripts.append(el)
            continue
        if tag in ("main", "article") or el.get("role") == "main" or el.get("itemprop") == "articleBody":
            sc.mains.append(el)
        if "breadcrumb" in cls or el.get("itemtype") or (tag == "nav" and el.get("aria-label")):
            sc.crumbs.append(el)
    return sc


def _candidates(sc: _Scan):
    """Yield (element, trusted) for the generic main-content elements, best
    first; each element has some text. A trusted element is the article even
    when short; untrusted ones (main/article/[role=main]) may be a teaser or
    wrapper, so trafilatura gets a chance when they are short."""
    ranked = []
    articles = sum(1 for el in sc.mains if el.tag == "article")
    for order, el in enumerate(sc.mains):
        rank = _main_rank(el, articles)
        if rank is not None:
            ranked.append((rank, order, el))
    ranked.sort(key=lambda r: (r[0], r[1]))
    for rank, _, el in ranked:
        if _has_text(el):
            yield el, rank < _UNTRUSTED_RANK


def _has_text(el) -> bool:
    return any(not t.isspace() for t in el.itertext())


def _main_rank(el, articles: int) -> int | None:
    """Priority of a generic main-content candidate (lower is better)."""
    if el.get("itemprop") == "articleBody":
        return 0                                    # schema.org
    if el.tag == "div" and el.get("role") == "main":
        return 1                                    # themes that mark their article div
    if el.tag == "main":
        return _UNTRUSTED_RANK
    if el.tag == "article" and articles == 1:
        return _UNTRUSTED_RANK + 1                  # several articles: a listing, let trafilatura judge
    if el.get("role") == "main":
        return _UNTRUSTED_RANK + 2
    return None


# --------------------------------------------------------------------------
# Cleaning the main element
# --------------------------------------------------------------------------

def _prepare_main(main, base: str, rules: Profile) -> None:
    """Clean the main element in place and reduce it to what a converter
    needs. Order matters: code is flattened first (removing most nodes of
    highlighted pages cheaply), the profile's chrome and rewrites need the
    classes of <span>s, and only then are inline spans unwrapped before the
    per-element Python pass."""
    _drop_inline_chrome(main)
    prepare_code(main)
    _drop_chrome(main, rules)
    if rules.admonitions:
        rewrite_admonitions(main, compile_css(rules.admonitions),
                            compile_css(rules.admonition_titles) if rules.admonition_titles else None)
    if rules.signatures:
        rewrite_signatures(main, compile_css(rules.signatures))
    unwrap_heading_anchors(main)
    etree.strip_tags(main, *_UNWRAP_TAGS)
    _clean(main)
    # Converters read only a few attributes; fewer attributes make the
    # fragment smaller to walk. Link titles are dropped on purpose: Sphinx's
    # "(in Python v3.11)" intersphinx titles are noise.
    etree.strip_attributes(main, *_NOISE_ATTRS)
    _absolutize(main, base)


def _drop_inline_chrome(main) -> None:
    # A Python pass over spans/cells beats an XPath with contains() here:
    # libxml2 evaluates every predicate on each of thousands of code spans.
    doomed = []
    for el in main.iter("span", "td", "div", "a", "button"):
        if el.tag == "button":
            if any(anc.tag == "pre" for anc in el.iterancestors("pre")):
                doomed.append(el)
            continue
        cls = el.get("class")
        if cls and ("line" in cls or "link" in cls or "cop" in cls or "clip" in cls) \
                and not _INLINE_CHROME_CLASSES.isdisjoint(cls.split()):
            doomed.append(el)
    for el in doomed:
        el.drop_tree()


def _drop_chrome(main, rules: Profile) -> None:
    """Remove the profile's noise, breadcrumbs, pager, version switcher and
    TOC from the main element, keeping any match that holds prose."""
    if not rules.chrome:
        return
    for el in compile_css(rules.chrome)(main):
        if el is main or el.getparent() is None or _holds_prose(el):
            continue
        el.drop_tree()


# Non-link text above this many characters is prose, not a widget label.
_PROSE_CHARS = 200


def _holds_prose(el) -> bool:
    """Conservative guard for removals by class name, role or keyword: an
    element that holds code, a data table, heading text or a paragraph's
    worth of non-link text is content whatever it is called."""
    if el.tag in _HEADINGS:
        return any(c.isalnum() for c in el.text_content())
    if el.tag == "a":
        # Heading self-links: a pilcrow/hash/icon is chrome, words are the title.
        in_heading = next(el.iterancestors(*_HEADINGS), None) is not None
        return in_heading and any(c.isalnum() for c in el.text_content())
    if el.find(".//pre") is not None or el.find(".//table") is not None:
        return True
    text = el.text_content()
    if len(text) < _PROSE_CHARS:
        return False
    link_chars = sum(len(a.text_content()) for a in el.iter("a"))
    return len(" ".join(text.split())) - link_chars >= _PROSE_CHARS


def _clean(main) -> None:
    """Drop generic chrome from the main element in place (text tails are
    kept): elements that never hold text, heading-less header/footer/aside,
    landmark roles, cookie banners and edit links."""
    doomed = []
    for el in main.iter():
        tag = el.tag
        if not isinstance(tag, str):  # comments, processing instructions
            doomed.append(el)
            continue
        if tag in _DROP_TAGS:
            doomed.append(el)
            continue
        if tag in ("header", "footer", "aside") and not _HEADING_XPATH(el):
            # Docusaurus keeps the h1 in a <header>: only heading-less ones are chrome.
            if (tag != "aside" or _is_chrome_aside(el)) and not _holds_prose(el):
                doomed.append(el)
                continue
        if el.get("role") in _DROP_ROLES and not _holds_prose(el):
            doomed.append(el)
            continue
        classes = el.get("class")
        element_id = el.get("id")
        if ((classes and _mentions_cookies(classes)) or (element_id and _mentions_cookies(element_id))) \
                and _is_cookie_banner(el, tag, classes):
            doomed.append(el)
            continue
        if tag == "a":
            # Spans are unwrapped already, so the direct text usually is the
            # whole link text; avoid text_content() on hundreds of links.
            text = el.text_content() if len(el) else (el.text or "")
            if len(text) < 40 and _is_edit_text(text):
                doomed.append(el)
    for el in doomed:
        if el is main:
            continue
        parent = el.getparent()
        if parent is None:
            continue  # already removed with an ancestor
        if isinstance(el.tag, str):
            el.drop_tree()
        else:
            remove_keep_tail(el)


def _is_edit_text(text: str) -> bool:
    # Words are never split by what _norm changes (whitespace, zero-width characters), so an edit
    # text's first word is in the link text as it is: most links are told apart by that alone.
    folded = text.casefold()
    return any(word in folded for word in _EDIT_WORDS) and _norm(text).casefold() in _EDIT_TEXTS


@functools.lru_cache(maxsize=4096)
def _mentions_cookies(ident: str) -> bool:
    """Whether a class or id attribute holds one of _COOKIE_WORDS: the cheap test every element
    with either takes (half of a docs page's main element has one), once per distinct value
    (class values repeat: "reference internal", "highlight-python"...). Neither holds a space,
    so a match in "class id" is a match in one of them."""
    return _COOKIE_HINT.search(ident) is not None


def _is_cookie_banner(el, tag: str, classes: str | None) -> bool:
    element_id = el.get("id")
    if not classes and not element_id:
        return False
    ident = f"{classes or ''} {element_id or ''}"
    # Every match holds one of _COOKIE_WORDS: most elements are told apart by one search for them
    # (case-insensitive as _COOKIE_RE is) before the regex's lazy repetitions are tried.
    if not _COOKIE_HINT.search(ident) or not _COOKIE_RE.search(ident):
        return False
    # Docutils sections get ids from their titles ("set-cookie-options"):
    # a section about cookies is content, a banner has no section heading.
    if tag in ("section", "article", "dl", "dt", "dd") or "section" in (classes or "").split():
        return False
    return not el.xpath(".//h1|.//h2|.//h3") and not _holds_prose(el)


def _is_chrome_aside(el) -> bool:
    # docutils renders ".. sidebar::" as <aside class="sidebar">: content.
    classes = set((el.get("class") or "").split())
    return not classes & {"sidebar", "topic", "admonition", "note", "warning", "footnote", "footnote-list"}


def _joined(key: tuple[str, str]) -> str | None:
    return _absolute(*key)


# Links resolved once per page directory and crawl, not once per anchor: a docs site's pages link
# the same sidebar and API targets (58,000 joins for the 495 pages of the Python docs).
_RESOLVED: BoundedCache[tuple[str, str], str | None] = BoundedCache(_joined)


def _absolutize(root, base: str) -> None:
    # Only <a href> and <img src> reach the Markdown, so resolve just those
    # instead of lxml's make_links_absolute (which also rewrites CSS/forms).
    try:
        directory = join_key(base)
    except ValueError:
        directory = base
    for el in root.iter("a", "img"):
        attr = "href" if el.tag == "a" else "src"
        raw = el.get(attr)
        if raw is None:
            continue
        val = raw.strip()
        if not val or val.lower().startswith(("javascript:", "data:")):
            del el.attrib[attr]
            continue
        if relative_to_page(val) or directory is base:
            resolved = _RESOLVED((base, val))
        else:
            # The fragment does not take part in the join: "os.html#os.path.join" and the
            # thousands of other anchors of a page resolve once.
            target, hash_sign, fragment = val.partition("#")
            resolved = _RESOLVED((directory, target))
            if resolved is not None and fragment:
                resolved += hash_sign + fragment
        if resolved is None:
            del el.attrib[attr]
        elif resolved != raw:  # most links of a docs page point elsewhere, written out in full
            el.set(attr, resolved)


def _headings(main) -> list[dict]:
    out = []
    for h in main.iter(*_HEADINGS):
        text = _norm(h.text_content()).replace("¶", "").strip()
        if text:
            out.append({"level": int(h.tag[1]), "text": text})
    return out


def _md_headings(md: str) -> list[dict]:
    out = []
    for line, kind in classify_lines(md.split("\n")):
        found = heading(line) if kind is Line.TEXT else None
        if found:
            out.append({"level": found[0], "text": found[1].replace("\\", "")})
    return out



# --------------------------------------------------------------------------
# Fallbacks
# --------------------------------------------------------------------------

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
        if el.tag in _DROP_TAGS or el.tag in ("header", "footer", "aside") \
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
          text: str | None = None) -> ExtractedPage:
    """``text``: ``visible_text(md)`` when the caller has it already."""
    title = meta["title"] or (headings[0]["text"] if headings else "")
    # JSON-LD and meta tags can carry what the tree could not (lone surrogates from JSON escapes).
    return ExtractedPage(
        title=clean_text(title),
        markdown=clean_text(md),
        lang=clean_text(meta["lang"]) if meta["lang"] else None,
        description=clean_text(meta["description"]) if meta["description"] else None,
        headings=[{**h, "text": clean_text(h["text"])} for h in headings],
        breadcrumbs=[clean_text(c) for c in meta["breadcrumbs"]],
        canonical_url=meta["canonical_url"],
        quality=_quality(md, degraded, text),
        degraded=degraded,
        generator=generator,
    )


_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
# Lines that are site furniture rather than article text when they survive
# into the Markdown: copyright and legal lines, edit/feedback prompts,
# prev/next labels, "built with" credits, on-page TOC titles.
_BOILERPLATE_LINE = re.compile(
    r"^(?:[>*_ -]*)(?:©|\(c\)|copyright\b|all rights reserved|privacy policy|terms of (?:service|use)"
    r"|edit (?:this|on) |view (?:page )?source|last (?:updated|modified)|was this page helpful"
    r"|(?:«|‹|<)? ?(?:previous|next)(?: page| chapter)?\s*(?:»|›|>)?$|skip to |built with |powered by "
    r"|theme by |on this page$|table of contents$|subscribe|share this|cookie)", re.I)


def _quality(md: str, degraded: bool, text: str | None = None) -> float:
    """Rough 0..1 usefulness of the extracted Markdown::

        quality = (0.50 * length + 0.30 * (1 - boilerplate) + 0.20 * fences_balanced)
                  * (1 - 0.8 * link_density)

    Link density multiplies rather than adds: a long page of links (an archive, a tag listing, a
    leftover menu) must score low however long it is.

    * ``length`` = min(1, visible text characters / 2000);
    * ``link_density`` = characters of link text / visible text characters;
    * ``boilerplate`` = share of the characters of non-code lines that are
      site furniture (copyright/legal lines, edit and feedback prompts,
      prev/next labels, "built with"/"powered by" credits, "On this page");
    * ``fences_balanced`` = 1 when the number of code fence lines is even.

    Plain-text fallbacks (``degraded``) are capped at 0.5. ``text``: ``visible_text(md)``, if known.
    """
    if text is None:
        text = visible_text(md)
    length = min(1.0, len(text) / 2000.0)
    link_chars = sum(len(m.group(1)) for m in _MD_LINK.finditer(md))
    density = min(1.0, link_chars / max(1, len(text)))
    fences, prose_chars, boiler_chars = 0, 0, 0
    for line, kind in classify_lines(md.split("\n")):
        if kind is Line.FENCE:
            fences += 1
        if kind is not Line.TEXT or not line.strip():
            continue
        prose_chars += len(line)
        if len(line) < 160 and _BOILERPLATE_LINE.match(line.strip()):
            boiler_chars += len(line)
    boilerplate = boiler_chars / prose_chars if prose_chars else 0.0
    balanced = 1.0 if fences % 2 == 0 else 0.0
    score = (0.5 * length + 0.3 * (1.0 - boilerplate) + 0.2 * balanced) * (1.0 - 0.8 * density)
    if degraded:
        score = min(score, 0.5)
    return round(max(0.0, min(1.0, score)), 3)
