"""Page metadata read from the parsed document (Scrapy-free): title, language, description,
canonical and base URL, article author and dates, breadcrumbs and headings."""
from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from itertools import islice
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from lxml import etree

from harvester.extract.profiles import GeneratorProfile, compile_css
from harvester.markdown.grammar import Line, classify_lines, heading

if TYPE_CHECKING:
    from harvester.extract.main_element import Scan

__all__ = ["absolute_url", "article_metadata", "base_url", "collapse_space", "element_headings", "folded", "iso_date",
           "markdown_headings", "page_metadata", "profile_breadcrumbs", "scanned_breadcrumbs"]

_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_TITLE_SEPARATORS = (" — ", " – ", " | ", " - ", " · ", " :: ", " » ")
# Fallback breadcrumb containers for profiles that name none of their own.
_GENERIC_CRUMBS = ("nav[aria-label=breadcrumb]", "nav[aria-label=Breadcrumb]", "nav[aria-label=breadcrumbs]",
                   "nav[aria-label=Breadcrumbs]", "[itemtype$=BreadcrumbList]")


def base_url(doc, url: str) -> str:
    """The URL the page's relative links resolve against: its ``<base href>``, else ``url``."""
    head = doc.find("head")
    href = head.xpath("string(base/@href)").strip() if head is not None else ""
    return (absolute_url(url, href) or url) if href else url


# Zero-width characters that themes put in headings (VitePress's header anchors) are not whitespace
# to str.split(), so they would keep an h1 from matching its <title>.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"), " ")


def collapse_space(s: str | None) -> str:
    """``s`` with runs of whitespace and zero-width characters as one space, trimmed."""
    return " ".join((s or "").translate(_INVISIBLE).split())


def folded(text: str) -> str:
    """``text`` with its whitespace collapsed, case-folded: for comparing titles and headings."""
    return collapse_space(text).casefold()


def page_metadata(doc, url: str) -> dict:
    """Title, language, description, canonical URL, author and dates (``article_metadata``) of the
    page (``breadcrumbs`` left empty)."""
    # <title>, <meta> and <link> live in <head>: searching only there keeps
    # this cheap on large API pages.
    head = doc.find("head")
    metas: dict[str, str] = {}
    title_text = canonical = ""
    if head is not None:
        title_el = head.find("title")
        title_text = collapse_space(title_el.text_content()) if title_el is not None else ""
        for m in head.iter("meta"):
            key = (m.get("name") or m.get("property") or m.get("http-equiv") or "").strip().lower()
            if key and key not in metas and m.get("content"):
                metas[key] = m.get("content").strip()
        for ln in head.iter("link"):
            if "canonical" in (ln.get("rel") or "").lower().split() and ln.get("href"):
                canonical = ln.get("href").strip()
                break
    # Themes that set the site's name in an <h1> of their header put the page's own h1 second.
    h1_elements = list(islice(doc.iter("h1"), 3))
    h1s = [collapse_space(el.text_content()).replace("¶", "").strip() for el in h1_elements]
    sites = {folded(name) for name in (metas.get("og:site_name"), metas.get("application-name")) if name}
    # An h1 linking home names the site, unless another h1 says the same (a header showing the page's title).
    sites |= {folded(text) for el, text in zip(h1_elements, h1s, strict=True)
              if _links_home(el, url) and sum(folded(other) == folded(text) for other in h1s) == 1}
    lang = (doc.get("lang") or doc.get("{http://www.w3.org/XML/1998/namespace}lang")
            or metas.get("content-language") or metas.get("og:locale") or "").strip()
    desc = metas.get("description") or metas.get("og:description") or metas.get("twitter:description")
    return {
        "title": _pick_title(title_text, h1s, sites),
        "lang": lang or None,
        "description": collapse_space(desc) or None,
        "canonical_url": absolute_url(url, canonical) if canonical else None,
        "breadcrumbs": [],
        **article_metadata(doc, metas),
    }


def _pick_title(title_text: str, h1s: list[str], sites: set[str] | None = None) -> str:
    """<title> less the site's name: the part before the last separator when it is clearly the page
    name (it matches one of the first h1s that is not the site's name), else the part before or
    after a separator that is the site's name (``sites``, case-folded: ``og:site_name``, an h1 that
    links to the site's home); otherwise the <title>, else the first h1 that is not the site's
    name. A separator with nothing after it (a theme's "Post - " when the site has no name) goes."""
    sites = sites or set()
    for sep in _TITLE_SEPARATORS:
        title_text = title_text.removesuffix(sep.rstrip()).removeprefix(sep.lstrip()).strip()
    parts = [(title_text.split(sep, 1), title_text.rsplit(sep, 1)) for sep in _TITLE_SEPARATORS if sep in title_text]
    for _, (head, _) in parts:
        head = head.strip()
        if head and any(head.casefold() == h1.casefold() for h1 in h1s if folded(h1) not in sites):
            return head
    for (first, rest), (head, last) in parts:
        if rest.strip() and folded(first) in sites:
            return rest.strip()  # "Site - Post" (Pelican's simple theme)
        if head.strip() and folded(last) in sites:
            return head.strip()
    return title_text or next((h1 for h1 in h1s if h1 and folded(h1) not in sites), h1s[0] if h1s else "")


def _links_home(h1, url: str) -> bool:
    """Whether the heading is a link to the site's home (a page at or above this one's folder): the
    site's name in a header, not the page's title."""
    links = list(h1.iter("a"))
    if len(links) != 1 or not url:
        return False
    target = absolute_url(url, links[0].get("href") or "")
    if not target:
        return False
    home, page = urlsplit(target), urlsplit(url)
    if home.path == page.path:
        return False  # a heading's self-link ("#title"), or the home page's own name
    folder = home.path if home.path.endswith("/") else home.path.rsplit("/", 1)[0] + "/"
    return home.netloc == page.netloc and page.path.startswith(folder) and home.path in (folder, folder + "index.html")


# Meta tag names (lower-cased name or property) that carry an article's author and dates, best first.
_PUBLISHED_METAS = ("article:published_time", "og:article:published_time", "datepublished", "dcterms.issued",
                    "dc.date.issued", "dcterms.created", "dc.date.created", "dcterms.date", "dc.date", "date",
                    "pubdate", "publish-date", "publish_date", "parsely-pub-date", "sailthru.date")
_MODIFIED_METAS = ("article:modified_time", "og:article:modified_time", "og:updated_time", "datemodified",
                   "dcterms.modified", "dc.date.modified")
_AUTHOR_METAS = ("author", "article:author", "dcterms.creator", "dc.creator", "parsely-author", "sailthru.author")
_JSONLD_DATES = {"published": "datePublished", "modified": "dateModified"}
# Attribute nodes: one pass over the tree, much cheaper than testing every element's attributes.
_ITEMPROPS = etree.XPath("//@itemprop")
_MICRODATA = {"datePublished": "published", "dateModified": "modified", "author": "author"}


def article_metadata(doc, metas: dict[str, str] | None = None) -> dict[str, str | None]:
    """``author`` (names joined with ", "), ``published`` and ``modified`` (``iso_date``) of an article
    page, each None when the page does not say: schema.org JSON-LD of an Article type, else meta
    tags, else microdata, else JSON-LD of any type, else a ``<time datetime>`` in the article's header.
    ``metas``: the head's meta tags by lower-cased name or property (read from ``doc`` when None)."""
    if metas is None:
        metas = _head_metas(doc)
    article, other = _jsonld_article(doc)
    found: dict[str, str | None] = {"author": None, "published": None, "modified": None}
    for source in (article, _from_metas(metas)):
        _fill(found, source)
    if not all(found.values()):
        _fill(found, _from_microdata(doc))
    _fill(found, other)
    if not (found["published"] or found["modified"]):
        _fill(found, _from_header_time(doc))
    if not found["author"]:
        found["author"] = _from_byline(doc)
    return found


def iso_date(value: str | None) -> str | None:
    """``value`` (ISO 8601, or an RFC 2822 date as in feeds) as ISO 8601: a date and time in UTC
    (``2024-03-05T09:30:00Z``) when it gives a zone, as written without one, a bare date as a date;
    None when it is not a plausible date."""
    text = (value or "").strip()
    if not text or len(text) > 64:
        return None
    try:
        when = datetime.fromisoformat(text.replace("/", "-"))
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
    if not 1900 <= when.year <= 2200:
        return None
    # A date alone (what fromisoformat leaves at midnight without a zone) stays a date.
    if len(text) <= 10 and "T" not in text and ":" not in text:
        return when.date().isoformat()
    if when.tzinfo is not None:
        return when.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"
    return when.isoformat(timespec="seconds")


def _fill(found: dict[str, str | None], source: dict[str, str | None]) -> None:
    for key, value in source.items():
        if value and not found[key]:
            found[key] = value


def _head_metas(doc) -> dict[str, str]:
    head = doc.find("head")
    metas: dict[str, str] = {}
    for m in head.iter("meta") if head is not None else ():
        key = (m.get("name") or m.get("property") or "").strip().lower()
        if key and key not in metas and m.get("content"):
            metas[key] = m.get("content").strip()
    return metas


def _from_metas(metas: dict[str, str]) -> dict[str, str | None]:
    published = next(filter(None, (iso_date(metas.get(k)) for k in _PUBLISHED_METAS)), None)
    modified = next(filter(None, (iso_date(metas.get(k)) for k in _MODIFIED_METAS)), None)
    # article:author is often a profile URL, twitter-style handles are not names.
    author = next((v for k in _AUTHOR_METAS if (v := collapse_space(metas.get(k))) and _is_name(v)), None)
    return {"author": author, "published": published, "modified": modified}


def _is_name(text: str) -> bool:
    return not (text.startswith(("http://", "https://", "@", "/")) or len(text) > 200)


def _jsonld_article(doc) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """What the page's JSON-LD says of its article (an ``*Article`` or ``*Posting`` type), and of any
    other typed object (a WebPage with dates)."""
    objects: list[dict] = []
    for script in doc.iter("script"):
        if (script.get("type") or "").strip().lower() != "application/ld+json":
            continue
        try:
            data = json.loads(script.text or "")
        except (ValueError, TypeError, RecursionError):
            continue
        objects.extend(_walk_json(data))
    ids = {o["@id"]: o for o in objects if isinstance(o.get("@id"), str) and len(o) > 1}
    article: dict[str, str | None] = {}
    other: dict[str, str | None] = {}
    for obj in objects:
        types = obj.get("@type")
        types = [types] if isinstance(types, str) else [t for t in types or () if isinstance(t, str)]
        if not types:
            continue
        target = article if any(t.endswith(("Article", "Posting")) for t in types) else other
        found = {key: iso_date(obj.get(name)) if isinstance(obj.get(name), str) else None
                 for key, name in _JSONLD_DATES.items()}
        found["author"] = _jsonld_names(obj.get("author"), ids)
        for key, value in found.items():
            if value and not target.get(key):
                target[key] = value
    return article, other


def _jsonld_names(author, ids: dict[str, dict]) -> str | None:
    """A JSON-LD ``author``: a name, a Person or Organization (or a reference to one by ``@id``), or a
    list of them."""
    names = []
    for one in author if isinstance(author, list) else [author]:
        if isinstance(one, dict) and "name" not in one:
            one = ids.get(one.get("@id"), one)
        name = one.get("name") if isinstance(one, dict) else one
        if isinstance(name, str) and (name := collapse_space(name)) and _is_name(name) and name not in names:
            names.append(name)
    return ", ".join(names) or None


def _from_microdata(doc) -> dict[str, str | None]:
    found: dict[str, str | None] = {"author": None, "published": None, "modified": None}
    for prop in _ITEMPROPS(doc):
        key = _MICRODATA.get(str(prop).strip())
        if key is None or found[key]:
            continue
        el = prop.getparent()
        if any("Comment" in (a.get("itemtype") or "") or a.get("itemprop") == "comment" for a in el.iterancestors()):
            continue  # a comment's author and date are not the article's
        if key == "author":
            names = el.xpath(".//*[@itemprop='name']")
            source = names[0] if names else el
            name = collapse_space(source.get("content") or source.text_content())
            found[key] = name if name and _is_name(name) else None
        else:
            found[key] = iso_date(el.get("content") or el.get("datetime") or el.text_content())
    return found


# A link to an author's own page: under /author/, /authors/, /profiles/, /people/ or /users/.
_AUTHOR_PAGE = re.compile(r"/(?:authors?|profiles?|people|users?)/[^/?#]+", re.I)
_NAME_WORDS = 5


def _from_byline(doc) -> str | None:
    """The name a byline links to the author's page (``rel="author"``, or a link to an author's or
    profile page) in the article's header, footer or address, the header that holds the page's h1,
    or the post's metadata block; else the one name that ``rel="author"`` links give anywhere outside
    comments."""
    links = []
    for a in doc.iter("a"):
        rel = a.get("rel")
        by_rel = rel is not None and "author" in rel.lower().split()
        if by_rel or _AUTHOR_PAGE.search(a.get("href") or ""):
            links.append((a, by_rel))
    for a, _ in links:
        if _in_byline(a) and (name := _byline_name(a)):
            return name
    names = {name for a, by_rel in links if by_rel and (name := _byline_name(a))}
    return names.pop() if len(names) == 1 else None


def _in_byline(a) -> bool:
    """Whether the link sits in an article's header, footer or address, the header that holds the
    page's h1, or a post's metadata block."""
    for el in a.iterancestors():
        if el.tag in ("header", "footer", "address") and next(el.iterancestors("article"), None) is not None:
            return True
        if (el.tag == "header" and el.find(".//h1") is not None) or _POST_META.search(el.get("class") or ""):
            return True
    return False


def _byline_name(a) -> str | None:
    """The link's text when it reads as a person's name (a few words, no digits), outside comments."""
    name = collapse_space(a.text_content())
    if not name or len(name.split()) > _NAME_WORDS or any(c.isdigit() for c in name) or not _is_name(name):
        return None
    return None if _in_comments(a) else name


# The class of a post's metadata block: "entry-meta", "post-meta", "md-post__meta", "post-info".
_POST_META = re.compile(r"\b[\w-]*(?:post|entry|article)[_-]+(?:meta(?:data)?|info|date|details)\b", re.I)


def _from_header_time(doc) -> dict[str, str | None]:
    """The ``<time datetime>`` (or a microformat's ``<abbr class="published" title>``) of an article's
    header, else of its footer or address, else of the header that holds the page's h1, else of a
    block whose class names a post's metadata (``entry-meta``, Material's ``md-post__meta``) when the
    page has one such block only; never a comment's."""
    found: dict[str, str | None] = {"published": None, "modified": None}
    ranked = []
    blocks = set()
    for el in _DATED(doc):
        if _in_comments(el):
            continue
        ancestors = list(el.iterancestors("header", "footer", "address", "article"))
        in_article = any(a.tag == "article" for a in ancestors)
        frame = next((a for a in ancestors if a.tag != "article"), None)
        if frame is not None and in_article:
            ranked.append((0 if frame.tag == "header" else 1, el))
        elif frame is not None and frame.tag == "header" and frame.find(".//h1") is not None:
            ranked.append((2, el))
        elif (block := next((a for a in el.iterancestors() if _POST_META.search(a.get("class") or "")), None)) is not None:
            ranked.append((3, el))
            blocks.add(block)
    if len(blocks) > 1:
        # Several posts' metadata (a related-posts box): none of them is surely the page's.
        ranked = [(rank, el) for rank, el in ranked if rank != 3]
    best = min((rank for rank, _ in ranked), default=None)
    for rank, el in ranked:
        if rank != best:
            continue
        classes = (el.get("class") or "").lower()
        key = "modified" if "updated" in classes or "modified" in classes else "published"
        if not found[key]:
            found[key] = iso_date(el.get("datetime") or el.get("title"))
    return found


# Dated elements: <time datetime>, and hAtom's and microformats2's <abbr class="published" title>.
_DATED = etree.XPath("//time[@datetime] | //abbr[@title and (contains(@class, 'published') or contains(@class, "
                     "'updated'))]")
_COMMENTS = re.compile(r"comment", re.I)


def _in_comments(el) -> bool:
    """Whether an element sits in a block whose class or id names comments."""
    return any(_COMMENTS.search(f"{a.get('class') or ''} {a.get('id') or ''}") for a in el.iterancestors())


def absolute_url(base: str, href: str) -> str | None:
    """``href`` joined to ``base``; None when urljoin refuses it (a malformed IPv6 host)."""
    try:
        return urljoin(base, href)
    except ValueError:
        return None


def profile_breadcrumbs(root, profile: GeneratorProfile | None) -> list[str]:
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


def scanned_breadcrumbs(sc: Scan) -> list[str]:
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
                    if isinstance(name, str) and collapse_space(name):
                        names.append(collapse_space(name))
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
    names = [collapse_space(n.text_content() or n.get("content")) for n in lst.xpath(".//*[@itemprop='name']")]
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
        text = collapse_space(li.text_content())
        if not text:
            # RTD's home crumb is an icon link with only an aria-label.
            a = li if li.tag == "a" else li.find(".//a")
            text = collapse_space(a.get("aria-label") or a.get("title")) if a is not None else ""
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


def element_headings(main) -> list[dict]:
    out = []
    for h in main.iter(*_HEADINGS):
        text = collapse_space(h.text_content()).replace("¶", "").strip()
        if text:
            out.append({"level": int(h.tag[1]), "text": text})
    return out


def heading_anchors(main) -> list[tuple[str, str]]:
    """``(text, id)`` of each heading of ``main`` that a URL fragment can point at, in order: the
    heading's own id, else that of the section it opens (Sphinx), else of an anchor inside it (a
    self-link's ``#id``, an ``id`` or ``name``). Read before cleaning strips the attributes."""
    out = []
    for h in main.iter(*_HEADINGS):
        text = collapse_space(h.text_content()).replace("¶", "").strip()
        anchor = h.get("id") or _section_id(h) or next(filter(None, map(_link_anchor, h.iter("a"))), None)
        if text and anchor:
            out.append((text, anchor))
    return out


def _link_anchor(a) -> str | None:
    href = a.get("href") or ""
    return href[1:] if href.startswith("#") and len(href) > 1 else a.get("id") or a.get("name")


def _section_id(h) -> str | None:
    parent = h.getparent()
    if parent is None or not parent.get("id") or parent.tag not in ("section", "div", "article"):
        return None
    first = next(parent.iter(*_HEADINGS), None)
    return parent.get("id") if first is h else None


def markdown_headings(md: str) -> list[dict]:
    out = []
    for line, kind in classify_lines(md.split("\n")):
        found = heading(line) if kind is Line.TEXT else None
        if found:
            out.append({"level": found[0], "text": found[1].replace("\\", "")})
    return out
