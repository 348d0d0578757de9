"""Main-content extraction for documentation pages (Scrapy-free).

``extract_page(html, url)`` turns one HTML page into an :class:`ExtractedPage`:
the main content as Markdown plus page metadata (title, language,
description, breadcrumbs, canonical URL, headings) and a rough quality score.

Strategy, best first:

1. **Known main element.** Documentation generators put the article in a
   predictable element (Sphinx ``div.body``/``[role=main]``, Read the Docs
   ``[itemprop=articleBody]``, MkDocs Material ``article.md-content__inner``,
   Docusaurus ``.theme-doc-markdown``, VitePress ``.vp-doc``, mdBook ``main``,
   DocBook ``div.chapter``..., then generic ``main``/``article``/
   ``[role=main]``). That element is cleaned of chrome (permalink anchors,
   buttons, line numbers, prev/next and edit links, cookie banners...) and
   converted with markdownify (:mod:`harvester.content.markdown`), which keeps
   code blocks, tables and heading levels intact -- trafilatura's own Markdown
   loses about half the fences and breaks tables on such sites.
2. **trafilatura** on the whole document when no known element exists
   (unknown sites, blogs).
3. **Plain text** of the body (``degraded=True``) as the last resort.

The document is parsed once with lxml; markdownify then only sees the small,
cleaned main fragment (code blocks flattened to text), which keeps a large
Sphinx page in the tens of milliseconds. Nothing here is shared between calls,
so it is safe to run in worker threads.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from urllib.parse import urljoin

import lxml.html
from lxml import etree

from harvester.content.markdown import element_to_markdown, tidy_markdown, visible_text

__all__ = ["ExtractedPage", "NoContent", "extract_page"]


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


class NoContent(Exception):
    """Raised with .reason (short snake_case str such as 'empty', 'too_short',
    'not_html', 'unparsable') when a page has no meaningful content."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


# --------------------------------------------------------------------------
# Selectors and cleaning rules
# --------------------------------------------------------------------------

def _cls(name: str) -> str:
    return f"contains(concat(' ', normalize-space(@class), ' '), ' {name} ')"


_DOCBOOK_CLASSES = frozenset({"book", "part", "chapter", "appendix", "preface", "article", "refentry",
                              "sect1", "section", "reference", "glossary", "index", "colophon"})
_UNTRUSTED_RANK = 10

# Elements that never carry article text.
_DROP_TAGS = frozenset({
    "script", "style", "noscript", "template", "nav", "button", "svg", "form", "iframe", "object",
    "embed", "input", "select", "textarea", "canvas", "dialog", "link", "meta", "title", "head",
})
# Chrome inside the main element: permalink anchors, line-number gutters,
# copy buttons, edit links, prev/next bars, sidebars and theme widgets.
_DROP_CLASSES = frozenset({
    "headerlink", "anchorjs-link", "hash-link", "header-anchor", "anchor-link", "linenos", "lineno",
    "linenodiv", "copybtn", "copy-button", "md-clipboard", "md-content__button", "md-source-file",
    "sphinxsidebar", "related", "rst-footer-buttons", "prev-next-area", "prev-next-bottom",
    "pagination-nav", "md-footer", "navheader", "navfooter", "edit-this-page",
    "theme-edit-this-page", "edit-page-link", "editthispage", "skip-link", "skip-to-content",
    "searchbox", "wy-breadcrumbs", "breadcrumbs", "breadcrumb", "theme-doc-footer",
    "theme-doc-toc-mobile", "toc-mobile", "vp-doc-footer", "mobile-nav", "admonition-todo-hidden",
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
_EDIT_TEXTS = frozenset({
    "edit this page", "edit on github", "edit on gitlab", "edit on bitbucket", "view page source",
    "show source", "show page source", "improve this page", "suggest an edit", "edit page",
    "view source", "report an issue",
})
# Inline chrome that must go before <span>s are unwrapped and code is
# flattened (or its text would stay behind): line numbers, permalink and
# copy widgets.
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
# Inline wrappers with no Markdown meaning. Sphinx wraps every code token in a
# <span>; unwrapping them in C halves the nodes markdownify has to walk.
_UNWRAP_TAGS = ("span", "font", "abbr", "bdi", "small", "big", "ins", "mark", "wbr", "data", "time")
# "highlight-python" (Sphinx), "language-js" (Prism/highlight.js/MkDocs),
# "lang-sh"; the hyphen is required so "highlighttable" is no language.
_LANG_CLASS = re.compile(r"^(?:highlight|language|lang)-([A-Za-z0-9_+#.-]+)$")
_LANG_ALIASES = {"default": "python", "python3": "python", "py": "python", "none": "", "text": "text",
                 "plain": "text", "plaintext": "text", "nohighlight": ""}
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)
_TITLE_SEPARATORS = (" — ", " – ", " | ", " - ", " · ", " :: ", " » ")


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------

def extract_page(html: str, url: str, *, min_chars: int = 80) -> ExtractedPage:
    """Extract the main content of one page as Markdown plus metadata.

    Raises NoContent('not_html' | 'unparsable' | 'empty' | 'too_short').
    """
    doc = _parse(html)
    base = _base_url(doc, url)
    sc = _scan(doc)
    meta = _metadata(doc, url, sc)

    for main, trusted in _candidates(doc, sc):
        _prepare_main(main, base)
        md = element_to_markdown(main)
        text = visible_text(md)
        if not text:
            continue
        if len(text) < min_chars and not trusted:
            continue
        if len(text) < min_chars:
            raise NoContent("too_short", f"{len(text)} chars")
        return _page(meta, md, _headings(main), degraded=False)

    _absolutize(doc, base)
    md = _trafilatura(doc, url)
    text = visible_text(md)
    if len(text) >= min_chars:
        return _page(meta, md, _md_headings(md), degraded=False)

    plain = _plain_text(doc)
    plain_len = len(visible_text(plain))
    if plain_len >= min_chars:
        return _page(meta, plain, [], degraded=True)
    longest = max(len(text), plain_len)
    if not longest:
        raise NoContent("empty")
    raise NoContent("too_short", f"{longest} chars")


# --------------------------------------------------------------------------
# Parsing and metadata
# --------------------------------------------------------------------------

def _parse(html: str | bytes) -> lxml.html.HtmlElement:
    if isinstance(html, bytes):
        html = html.decode("utf-8", "replace")
    if not html or not html.strip():
        raise NoContent("empty")
    head = html[:2048].lstrip("\ufeff \t\r\n")
    if "\x00" in head or "<" not in html[:65536]:
        raise NoContent("not_html")
    if head.startswith(("{", "[", "%PDF")):
        raise NoContent("not_html")
    # lxml refuses str input that still carries an encoding declaration.
    html = _XML_DECL.sub("", html, count=1)
    try:
        doc = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError) as exc:
        if "empty" in str(exc).lower():
            raise NoContent("empty") from exc
        raise NoContent("unparsable", str(exc)) from exc
    if doc is None:
        raise NoContent("empty")
    return doc


def _base_url(doc, url: str) -> str:
    head = doc.find("head")
    href = head.xpath("string(base/@href)").strip() if head is not None else ""
    return (_absolute(url, href) or url) if href else url


def _norm(s: str | None) -> str:
    return " ".join((s or "").split())


def _metadata(doc, url: str, sc: "_Scan") -> dict:
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
    h1_el = doc.find(".//h1")
    h1 = _norm(h1_el.text_content()).replace("¶", "").strip() if h1_el is not None else ""
    lang = (doc.get("lang") or doc.get("{http://www.w3.org/XML/1998/namespace}lang")
            or metas.get("content-language") or metas.get("og:locale") or "").strip()
    desc = metas.get("description") or metas.get("og:description") or metas.get("twitter:description")
    return {
        "title": _pick_title(title_text, h1),
        "lang": lang or None,
        "description": _norm(desc) or None,
        "canonical_url": _absolute(url, canonical) if canonical else None,
        "breadcrumbs": _breadcrumbs(sc),
    }


def _pick_title(title_text: str, h1: str) -> str:
    """<title> minus the site suffix when the prefix is clearly the page name
    (it matches the h1); otherwise the <title>, else the h1."""
    if title_text and h1:
        for sep in _TITLE_SEPARATORS:
            if sep in title_text:
                head = title_text.rsplit(sep, 1)[0].strip()
                if head and head.casefold() == h1.casefold():
                    return head
    return title_text or h1


def _absolute(base: str, href: str) -> str | None:
    try:
        return urljoin(base, href)
    except ValueError:
        return None


def _breadcrumbs(sc: "_Scan") -> list[str]:
    """Trail from schema.org JSON-LD or microdata, else from the breadcrumb
    markup of common themes."""
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
    if "wy-breadcrumbs" in classes:
        return 1                                    # Sphinx Read the Docs theme
    if "md-path" in classes:
        return 2                                    # MkDocs Material
    if classes & {"breadcrumbs", "breadcrumb"}:
        return 3
    if el.tag == "ul" and "related" in (el.getparent().get("class") or "").split() \
            and el.getparent().get("role") == "navigation":
        return 4                                    # Sphinx basic themes' related bar
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
# Main element
# --------------------------------------------------------------------------

@dataclass
class _Scan:
    """Elements of interest found in one pass over the document."""
    mains: list = field(default_factory=list)
    crumbs: list = field(default_factory=list)
    scripts: list = field(default_factory=list)
    docbook_divs: list = field(default_factory=list)
    docbook: bool = False


# Tags that can be a main element or a breadcrumb container. Iterating only
# these (a C-level filter) skips the thousands of <span>s of highlighted
# code; a Python pass over them beats one XPath with several contains().
_SCAN_TAGS = ("div", "main", "article", "nav", "ul", "ol", "section", "script")


def _scan(doc) -> _Scan:
    sc = _Scan()
    body = doc.find("body")
    for el in doc.iter(*_SCAN_TAGS):
        tag = el.tag
        cls = el.get("class") or ""
        if tag == "script":
            if el.get("type") == "application/ld+json":
                sc.scripts.append(el)
            continue
        if (tag in ("main", "article") or el.get("role") == "main" or el.get("itemprop") == "articleBody"
                or ("body" in cls or "document" in cls or "vp-doc" in cls or "md-content" in cls
                    or "theme-doc" in cls)):
            sc.mains.append(el)
        if ("breadcrumb" in cls or "md-path" in cls or el.get("itemtype")
                or (tag == "nav" and el.get("aria-label"))
                or (tag == "ul" and el.getparent().get("role") == "navigation")):
            sc.crumbs.append(el)
        if tag == "div" and cls:
            if "navheader" in cls or "navfooter" in cls:
                sc.docbook = True
            parent = el.getparent()
            if parent is body or (parent is not None and parent.getparent() is body):
                sc.docbook_divs.append(el)
    if not sc.docbook:
        head = doc.find("head")
        gen = head.xpath("string(meta[@name='generator']/@content)") if head is not None else ""
        sc.docbook = "docbook" in gen.lower()
    return sc


def _candidates(doc, sc: _Scan):
    """Yield (element, trusted) for the known main-content elements, best
    first; each element has some text. Trusted elements belong to a known
    generator and are the article even when short; untrusted (generic
    main/article/[role=main]) ones may be a teaser or wrapper."""
    ranked = []
    articles = sum(1 for el in sc.mains if el.tag == "article")
    for order, el in enumerate(sc.mains):
        rank = _main_rank(el, articles)
        if rank is not None:
            ranked.append((rank, order, el))
    if sc.docbook:
        for order, el in enumerate(sc.docbook_divs):
            if not _DOCBOOK_CLASSES.isdisjoint(el.get("class").split()):
                ranked.append((8, order, el))
                break
    ranked.sort(key=lambda r: (r[0], r[1]))
    for rank, _, el in ranked:
        if _has_text(el):
            yield el, rank < _UNTRUSTED_RANK


def _has_text(el) -> bool:
    return any(not t.isspace() for t in el.itertext())


def _main_rank(el, articles: int) -> int | None:
    """Priority of a main-content candidate (lower is better), None if the
    element only matched the coarse substring scan by accident (class "tbody-x")."""
    classes = set((el.get("class") or "").split())
    tag, role = el.tag, el.get("role")
    if el.get("itemprop") == "articleBody":
        return 0                                    # Sphinx Read the Docs theme
    if tag == "article" and "md-content__inner" in classes:
        return 1                                    # MkDocs Material
    if "theme-doc-markdown" in classes:
        return 2                                    # Docusaurus
    if "vp-doc" in classes:
        return 3                                    # VitePress
    if tag == "div" and "body" in classes:
        if role == "main":
            return 4                                # Sphinx basic/alabaster
        for anc in el.iterancestors("div"):
            if {"bodywrapper", "documentwrapper"} & set((anc.get("class") or "").split()):
                return 5
    if tag == "div" and role == "main":
        return 6                                    # Sphinx/MkDocs themes
    if tag == "main":
        parent = el.getparent()
        if parent is not None and parent.get("id") == "content":
            return 7                                # mdBook
        return _UNTRUSTED_RANK
    if tag == "div" and "document" in classes:
        return 9                                    # old Sphinx themes (sidebar removed later)
    if tag == "article" and articles == 1:
        return _UNTRUSTED_RANK + 1                  # several articles: a listing, let trafilatura judge
    if role == "main":
        return _UNTRUSTED_RANK + 2
    return None


def _prepare_main(main, base: str) -> None:
    """Clean the main element in place and reduce it to what markdownify
    needs. Order matters for speed: code blocks are flattened and inline
    spans unwrapped (cheap C calls) before the per-element Python pass."""
    _drop_inline_chrome(main)
    _prepare_code(main)
    etree.strip_tags(main, *_UNWRAP_TAGS)
    _clean(main)
    # markdownify reads only these attributes; fewer attributes make the
    # fragment smaller to serialise and re-parse. Link titles are dropped on
    # purpose: Sphinx's "(in Python v3.11)" intersphinx titles are noise.
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


def _clean(main) -> None:
    """Drop chrome from the main element in place (text tails are kept)."""
    doomed = []
    for el in main.iter():
        tag = el.tag
        if not isinstance(tag, str):  # comments, processing instructions
            doomed.append(el)
            continue
        if tag in _DROP_TAGS:
            doomed.append(el)
            continue
        if tag in ("header", "footer", "aside") and not el.xpath(".//h1|.//h2|.//h3|.//h4|.//h5|.//h6"):
            # Docusaurus keeps the h1 in a <header>: only heading-less ones are chrome.
            if tag != "aside" or _is_chrome_aside(el):
                doomed.append(el)
                continue
        classes = el.get("class")
        if classes and not _DROP_CLASSES.isdisjoint(classes.split()):
            doomed.append(el)
            continue
        if classes and "admonition-title" in classes:
            _embolden(el)  # "Note"/"Warning" would read as a body paragraph
        if el.get("role") in _DROP_ROLES:
            doomed.append(el)
            continue
        if _is_cookie_banner(el, tag, classes):
            doomed.append(el)
            continue
        if tag == "a":
            # Spans are unwrapped already, so the direct text usually is the
            # whole link text; avoid text_content() on hundreds of links.
            text = el.text_content() if len(el) else (el.text or "")
            if len(text) < 40 and _norm(text).casefold() in _EDIT_TEXTS:
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
            _remove_keep_tail(el)


def _embolden(el) -> None:
    strong = lxml.html.Element("strong")
    strong.text, el.text = el.text, None
    strong.extend(list(el))
    el.append(strong)


def _is_cookie_banner(el, tag: str, classes: str | None) -> bool:
    ident = (classes or "") + " " + (el.get("id") or "")
    if not _COOKIE_RE.search(ident):
        return False
    # Docutils sections get ids from their titles ("set-cookie-options"):
    # a section about cookies is content, a banner has no section heading.
    if tag in ("section", "article", "dl", "dt", "dd") or "section" in (classes or "").split():
        return False
    return not el.xpath(".//h1|.//h2|.//h3")


def _is_chrome_aside(el) -> bool:
    # docutils renders ".. sidebar::" as <aside class="sidebar">: content.
    classes = set((el.get("class") or "").split())
    return not classes & {"sidebar", "topic", "admonition", "note", "warning", "footnote", "footnote-list"}


def _remove_keep_tail(el) -> None:
    parent = el.getparent()
    tail = el.tail
    if tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(el)


def _prepare_code(main) -> None:
    """Flatten every outermost <pre> to its exact text and record its
    language in data-lang; nested <pre> and highlighting markup vanish, so
    markdownify emits exactly one fence per block."""
    for table in main.xpath(f".//table[{_cls('highlighttable')}]"):
        # Pygments line-number tables: keep only the code cell.
        code = table.xpath(f".//td[{_cls('code')}]")
        if code:
            holder = lxml.html.Element("div")
            holder.extend(list(code[0]))
            holder.tail = table.tail
            table.getparent().replace(table, holder)
    for pre in main.xpath(".//pre[not(ancestor::pre)]"):
        lang = _code_language(pre)
        for br in pre.iter("br"):
            br.tail = "\n" + (br.tail or "")
        text = pre.text_content()
        tail = pre.tail
        pre.clear()
        pre.text = text
        pre.tail = tail
        if lang:
            pre.set("data-lang", lang)


def _code_language(pre) -> str:
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
    return ""


def _lang_alias(name: str) -> str:
    name = name.strip().lower()
    return _LANG_ALIASES.get(name, name)


def _absolutize(root, base: str) -> None:
    # Only <a href> and <img src> reach the Markdown, so resolve just those
    # instead of lxml's make_links_absolute (which also rewrites CSS/forms).
    for el in root.iter("a", "img"):
        attr = "href" if el.tag == "a" else "src"
        val = el.get(attr)
        if val is None:
            continue
        val = val.strip()
        if not val or val.lower().startswith(("javascript:", "data:")):
            del el.attrib[attr]
            continue
        resolved = _absolute(base, val)
        if resolved is None:
            del el.attrib[attr]
        else:
            el.set(attr, resolved)


def _headings(main) -> list[dict]:
    out = []
    for h in main.iter(*_HEADINGS):
        text = _norm(h.text_content()).replace("¶", "").strip()
        if text:
            out.append({"level": int(h.tag[1]), "text": text})
    return out


_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")


def _md_headings(md: str) -> list[dict]:
    out, fence = [], False
    for line in md.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
            continue
        m = None if fence else _ATX.match(line)
        if m:
            out.append({"level": len(m.group(1)), "text": m.group(2).replace("\\", "")})
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
                or not _CHROME_IDS.isdisjoint(ident) or not _DROP_CLASSES.isdisjoint(ident):
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


# --------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------

def _page(meta: dict, md: str, headings: list[dict], *, degraded: bool) -> ExtractedPage:
    title = meta["title"] or (headings[0]["text"] if headings else "")
    return ExtractedPage(
        title=title,
        markdown=md,
        lang=meta["lang"],
        description=meta["description"],
        headings=headings,
        breadcrumbs=meta["breadcrumbs"],
        canonical_url=meta["canonical_url"],
        quality=_quality(md, degraded),
        degraded=degraded,
    )


_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def _quality(md: str, degraded: bool) -> float:
    """0..1: enough text (saturates at 2000 chars), few link-only words, and
    balanced code fences; plain-text fallbacks are capped at 0.5."""
    text = visible_text(md)
    length = min(1.0, len(text) / 2000.0)
    link_chars = sum(len(m.group(1)) for m in _MD_LINK.finditer(md))
    density = min(1.0, link_chars / max(1, len(text)))
    fences = sum(1 for line in md.split("\n") if line.lstrip(" :>-*").startswith(("```", "~~~")))
    balanced = 1.0 if fences % 2 == 0 else 0.0
    score = 0.5 * length + 0.3 * (1.0 - density) + 0.2 * balanced
    if degraded:
        score = min(score, 0.5)
    return round(max(0.0, min(1.0, score)), 3)
