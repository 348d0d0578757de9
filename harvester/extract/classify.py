"""What a fetched page is, before and after extraction (Scrapy-free).

``classify_page`` gives one verdict per response: ``content``, ``app_shell`` (a single-page app
fetched without running its scripts), ``blocked`` (a captcha, an "Access Denied" or "Too Many
Requests" page, a Cloudflare challenge, even when served with status 200), ``login_wall``,
``search_page`` (a site's search form or search results, not a page about searching),
``listing`` (a tag, category, author or date archive, a paginated index, search results, a help
centre's category or section page: navigation, whose links are followed), ``error_page`` (an error
status, or a "page not found" page served with 200) or ``empty``.

A page whose text is only navigation (menus, sidebars, headers, footers: ``navigation_only``) has
no content: it is ``empty``, or an ``app_shell`` when it runs scripts, whatever its extraction kept
(a single-page app's static HTML often holds its menus and an empty mount point).
The verdict decides whether a page is stored, and whether the browser is tried
(``harvester.render.policy``).

A listing is told by its structure, not by its URL or its vendor's class names: most of its main
content is a run of similar items (each led by a link to a page of the same site, its title, with
maybe a date or an excerpt) and it has little text of its own; pagination links, a title such as
"Tag: ..." or "Archives", a schema.org CollectionPage and a breadcrumb trail let fewer items do. A page of a generator
that writes every page whole (Sphinx, MkDocs...: its section indexes are documentation) is never one.

The rules only fire on short pages: a long article that mentions a captcha or a login form is
content. They are markers, not a model, so every rule is listed here and tested
(tests/test_classify.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from urllib.parse import urlsplit

import lxml.html
from lxml import etree

from harvester.extract.metadata import absolute_url
from harvester.extract.parser import document_fromstring
from harvester.extract.profiles import profile_by_name


class PageType(str, Enum):  # noqa: UP042 (a StrEnum's str() would change the reports' text)
    CONTENT = "content"
    APP_SHELL = "app_shell"
    BLOCKED = "blocked"
    LOGIN_WALL = "login_wall"
    SEARCH_PAGE = "search_page"
    LISTING = "listing"
    ERROR_PAGE = "error_page"
    EMPTY = "empty"


# Pages kept out of the index whatever their extraction gave.
NOT_INDEXED = (PageType.BLOCKED, PageType.LOGIN_WALL, PageType.SEARCH_PAGE, PageType.LISTING)


@dataclass(frozen=True)
class Verdict:
    type: PageType
    reason: str  # which rule decided, for logs and tests
    has_scripts: bool = False  # rendering can only change a page that runs scripts


# A page with more visible text than this is content whatever markers it has.
SHORT_TEXT = 1500
# An app shell shows at most this much text before its scripts run (a header, a footer, a
# "loading..." line).
SHELL_TEXT = 300
# Text outside navigation under this many characters: the page is navigation only.
NAV_ONLY_TEXT = 80
# A search page keeps at most this much extracted text (a title, a hint, a form).
SEARCH_TEXT = 600
# A listing: at least this many items (links to pages of the site), or LISTING_HINTED_ITEMS with
# pagination, an archive title, a collection schema, a breadcrumb trail, og:type "website" or items
# marked as entries (each an <article>, its title link rel="bookmark", or dated by a <time>); at most
# LISTING_OWN_TEXT characters of main content outside the items (a title, a one-line description, an
# author's short bio), ARTICLE_OWN_TEXT when the page's h1 heads an <article> of its own (a short
# post followed by related posts); and items holding at least twice that text.
LISTING_ITEMS = 4
LISTING_HINTED_ITEMS = 2
LISTING_OWN_TEXT = 400
ARTICLE_OWN_TEXT = 150
# An item longer than this is a section of an article or a whole post, not an entry of a listing.
ITEM_TEXT = 1000
# Links of the main content looked at (a listing's page has tens of them; a long page's cost is capped).
LISTING_LINKS = 200

# Elements single-page-app frameworks mount into: React (create-react-app, Vite), Vue, Next.js,
# Nuxt, Gatsby, Angular, Svelte(Kit), Quasar, Docsify, Ember.
_MOUNT_IDS = ("root", "app", "__next", "__nuxt", "___gatsby", "svelte", "q-app", "main-app", "ember-app")
_MOUNT_TAGS = ("app-root",)
_ENABLE_JS = re.compile(
    r"(enable|turn on|activate|requires?|need)\s+(your\s+)?javascript|javascript\s+(is\s+)?(required|disabled|must be enabled)",
    re.IGNORECASE,
)
_BLOCKED_TITLES = re.compile(
    r"^\s*(just a moment|attention required|access denied|access to this page has been denied|"
    r"too many requests|request blocked|you have been blocked|are you a robot|human verification|"
    r"security check|ddos protection|pardon our interruption|403 forbidden|429 too many requests)",
    re.IGNORECASE,
)
_BLOCKED_TEXT = re.compile(
    r"(verify(ing)? (that )?you are (a )?human|checking (if the site connection is secure|your browser)|"
    r"unusual traffic from your (computer )?network|complete the security check|you have been blocked|"
    r"access (to this (page|resource) )?(is |has been )?denied|too many requests|rate limit(ed)? exceeded|"
    r"enable (javascript and )?cookies to continue|press (&|and) hold)",
    re.IGNORECASE,
)
# Challenge widgets and scripts: reCAPTCHA, hCaptcha, Cloudflare Turnstile and its challenge
# platform, DataDome, PerimeterX.
_CAPTCHA_MARKUP = re.compile(
    r"g-recaptcha|h-captcha|cf-turnstile|challenge-platform|cf-chl-|cf_chl_|captcha-delivery|"
    r"px-captcha|/recaptcha/api\.js|hcaptcha\.com/1/api\.js",
    re.IGNORECASE,
)
_LOGIN_WORDS = re.compile(
    r"\b(sign[ -]?in|log[ -]?in|login|sign on|single sign-on|authenticate|authentication required)\b",
    re.IGNORECASE,
)
_NOT_FOUND = re.compile(
    r"\b(404|page not found|not found|no longer (exists|available)|does(n't| not) exist|"
    r"could(n't| not) be found|page (is )?missing|nothing (was )?found|500|internal server error|"
    r"something went wrong|error occurred)\b",
    re.IGNORECASE,
)
_HASH_ROUTES = ("#/", "#!/")  # client-side routes: #/guide, #!/guide
_SEARCH_TITLE = re.compile(r"^\s*(search(ing)?|search results|results)\b", re.IGNORECASE)
# Query fields of search forms (Sphinx, MkDocs, WordPress, most site searches).
_SEARCH_FIELDS = frozenset({"q", "query", "search", "s", "searchterm", "keywords", "term", "text"})
# Containers of navigation: landmarks, and class/id words themes give their menus and sidebars.
_NAV_TAGS = frozenset({"nav", "header", "footer", "aside"})
_NAV_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "menu", "menubar", "search"})
_NAV_WORDS = frozenset({"nav", "navbar", "navigation", "menu", "sidebar", "sidenav", "toc", "breadcrumb",
                        "breadcrumbs", "topbar", "header", "footer", "masthead"})
_NAV_HOLDERS = ("div", "ul", "ol", "section", "td")
_WORD_SPLIT = re.compile(r"[-_\s]+")
_ROLE_MAIN = etree.XPath("boolean(.//*[@role='main'])")


def classify_page(html: str | bytes, status: int = 200, *, extracted_chars: int | None = None,
                  doc: lxml.html.HtmlElement | None = None, url: str | None = None,
                  generator: str | None = None) -> Verdict:
    """The verdict for one HTML response.

    ``extracted_chars``: the length of the Markdown extraction kept, or 0 when extraction found
    nothing (None when not tried); a page with scripts and no extracted content is an app shell.
    ``doc``: the page's parsed tree, when the caller has it (it is only read).
    ``url``: the page's URL (a listing's items link to its own host); ``generator``: the extraction
    profile that recognised the page, if one did.
    """
    if doc is None:
        doc = _parse(html)
    if doc is None:
        return Verdict(PageType.EMPTY, "unparsable")
    return decide(read_signals(doc, html, url), status, extracted_chars, generator)


def decide(page: Signals, status: int = 200, extracted_chars: int | None = None,
           generator: str | None = None) -> Verdict:
    """The verdict from a page's signals (``read_signals``, taken before extraction changes the
    tree), what extraction kept and the generator profile that recognised the page."""
    scripts = page.has_scripts
    if status == 429 or (status == 403 and page.short):
        return Verdict(PageType.BLOCKED, f"status_{status}", scripts)
    if page.short and (_BLOCKED_TITLES.search(page.title) or _BLOCKED_TITLES.search(page.h1)):
        return Verdict(PageType.BLOCKED, "block_title", scripts)
    if page.short and page.captcha:
        return Verdict(PageType.BLOCKED, "captcha", scripts)
    if page.text_chars < 600 and _BLOCKED_TEXT.search(page.text):
        return Verdict(PageType.BLOCKED, "block_text", scripts)
    if status == 401:
        return Verdict(PageType.LOGIN_WALL, "status_401", scripts)
    if page.short and page.password_inputs and (
            _LOGIN_WORDS.search(page.title) or _LOGIN_WORDS.search(page.h1) or page.text_chars < 600):
        return Verdict(PageType.LOGIN_WALL, "login_form", scripts)
    if status >= 400:
        return Verdict(PageType.ERROR_PAGE, f"status_{status}", scripts)
    if page.text_chars < 800 and (_NOT_FOUND.search(page.title) or _NOT_FOUND.search(page.h1)):
        return Verdict(PageType.ERROR_PAGE, "soft_404", scripts)
    if (page.search_inputs and (_SEARCH_TITLE.search(page.title) or _SEARCH_TITLE.search(page.h1))
            and page.short and (extracted_chars or 0) < SEARCH_TEXT):
        return Verdict(PageType.SEARCH_PAGE, "search_form", scripts)
    if page.navigation_only:
        if scripts:
            return Verdict(PageType.APP_SHELL, "navigation_only", True)
        return Verdict(PageType.EMPTY, "navigation_only", scripts)
    shell = _shell_reason(page)
    if shell and (page.text_chars <= SHELL_TEXT or extracted_chars == 0):
        return Verdict(PageType.APP_SHELL, shell, True)
    listing = _listing_reason(page)
    if listing and not _writes_pages_whole(generator):
        return Verdict(PageType.LISTING, listing, scripts)
    if extracted_chars == 0 or page.text_chars == 0:
        if scripts and page.text_chars <= SHELL_TEXT:
            return Verdict(PageType.APP_SHELL, "scripts_no_text", True)
        return Verdict(PageType.EMPTY, "no_content", scripts)
    return Verdict(PageType.CONTENT, "content", scripts)


def read_signals(doc: lxml.html.HtmlElement, html: str | bytes = "", url: str | None = None) -> Signals:
    """What the rules look at, read from the parsed page (which is not changed); ``url`` tells the
    links to the page's own site from the others (without it every link counts as the site's)."""
    return Signals.read(doc, html, url)


def _listing_reason(page: Signals) -> str | None:
    """Why the page is a listing, or None: enough items, holding most of its text."""
    items = page.listing_items
    if items < LISTING_HINTED_ITEMS or (items < LISTING_ITEMS and not page.listing_hints):
        return None
    own = page.listing_own_chars
    if own > (ARTICLE_OWN_TEXT if page.article_h1 else LISTING_OWN_TEXT) or page.listing_item_chars < 2 * own:
        return None
    return page.listing_hints[0] if page.listing_hints else "repeated_items"


def _writes_pages_whole(generator: str | None) -> bool:
    if not generator:
        return False
    try:
        return profile_by_name(generator).writes_pages_whole
    except KeyError:
        return False


def _shell_reason(page: Signals) -> str | None:
    if not page.has_scripts:
        return None
    if page.empty_mount:
        return "empty_mount"
    if page.enable_js:
        return "noscript"
    if page.hash_links and page.hash_links * 2 >= page.links:
        return "hash_routing"
    return None


@dataclass
class Signals:
    title: str
    h1: str
    # The visible text: all of it on a short page, else its first SHORT_TEXT characters or a few
    # more (the rules compare its length with SHORT_TEXT at most), so ``text_chars`` is a floor.
    text: str
    text_chars: int
    has_scripts: bool
    empty_mount: bool
    enable_js: bool
    captcha: bool  # challenge markup in the raw HTML; looked for on short pages only
    password_inputs: int
    links: int
    hash_links: int
    iframes: tuple[str, ...] = ()  # the src of every iframe, as written
    content_chars: int | None = None  # visible text outside navigation containers
    search_inputs: int = 0  # query fields of search forms outside them (not the header's search box)
    # The main content's run of similar items led by links to the site's pages (``ListingShape``).
    listing_items: int = 0  # the pages they link to
    listing_item_chars: int = 0
    listing_own_chars: int = 0  # the main content's text outside them (counted up to what decides)
    # "pagination", "archive_title", "collection_schema", "breadcrumb", "og_website", "entries"
    listing_hints: tuple[str, ...] = ()
    article_h1: bool = False  # the h1 heads an <article> that is not one of the items

    @property
    def short(self) -> bool:
        return self.text_chars < SHORT_TEXT

    @property
    def navigation_only(self) -> bool:
        """The page has text, all of it (nearly) in menus, sidebars, headers and footers."""
        return (self.content_chars is not None and self.content_chars < NAV_ONLY_TEXT
                and self.text_chars >= NAV_ONLY_TEXT)

    @classmethod
    def read(cls, doc: lxml.html.HtmlElement, html: str | bytes, url: str | None = None) -> Signals:
        # One walk of the tree for every element the rules count, in document order: lxml walks
        # the whole tree for each iter() whose tag the page has (for the first match too, as it
        # looks ahead for the next), which is slow on a large API page.
        title_el = h1_el = main_el = None
        has_scripts = empty_mount = False
        noscripts: list[str] = []
        json_ld: list[str] = []
        links = hash_links = password_inputs = 0
        iframes: list[str] = []
        for el in doc.iter(*_SIGNAL_TAGS):
            tag = el.tag
            if tag == "a":
                links += 1
                if (el.get("href") or "").startswith(_HASH_ROUTES):
                    hash_links += 1
            elif tag in _MOUNT_CANDIDATES:
                if not empty_mount and _is_empty_mount(el):
                    empty_mount = True
                if tag == "main" and main_el is None:
                    main_el = el
            elif tag == "script":
                kind = (el.get("type") or "").lower()
                if not has_scripts and kind not in _DATA_SCRIPTS:
                    has_scripts = True
                elif kind == "application/ld+json" and el.text:
                    json_ld.append(el.text)
            elif tag == "input":
                if (el.get("type") or "").lower() == "password":
                    password_inputs += 1
            elif tag == "title":
                if title_el is None and el is not doc:
                    title_el = el
            elif tag == "h1":
                if h1_el is None:
                    h1_el = el
            elif tag == "noscript":
                noscripts.append(_text(el))
            elif tag == "iframe" and el.get("src"):
                iframes.append(el.get("src"))
        noscript = " ".join(noscripts)
        text, content, search_inputs = _visible_texts(doc, text_enough=SHORT_TEXT, content_enough=NAV_ONLY_TEXT)
        # Captcha markup only counts on a short page (``decide``): a long page's raw HTML, up to
        # 200 KB of it, is not case-folded for it.
        captcha = False
        if len(text) < SHORT_TEXT:
            raw = html if isinstance(html, str) else html.decode("utf-8", "replace")
            captcha = _has_captcha_markup(raw[:200_000])
        title, h1 = _text(title_el), _text(h1_el)
        shape = ListingShape.read(doc, main_el, h1_el, url)
        hints: list[str] = []
        if shape.needs_hints:  # read only where they decide
            hints = [name for name, found in (
                ("pagination", lambda: bool(_PAGINATION(doc))),
                ("archive_title", lambda: bool(_ARCHIVE_TITLE.search(h1) or _ARCHIVE_TITLE.search(title))),
                ("collection_schema", lambda: _collection_schema(doc, json_ld)),
                ("breadcrumb", lambda: bool(_BREADCRUMB(doc)) or any("BreadcrumbList" in text for text in json_ld)),
                ("og_website", lambda: _OG_WEBSITE(doc)),
                ("entries", lambda: shape.entries >= LISTING_HINTED_ITEMS),
            ) if found()]
        return cls(
            title=title, h1=h1, text=text, text_chars=len(text),
            has_scripts=has_scripts,
            empty_mount=empty_mount,
            enable_js=bool(_ENABLE_JS.search(noscript)) or bool(_ENABLE_JS.search(text[:SHELL_TEXT * 2])),
            captcha=captcha,
            password_inputs=password_inputs,
            links=links, hash_links=hash_links,
            iframes=tuple(iframes),
            content_chars=len(content),
            search_inputs=search_inputs,
            listing_items=shape.items, listing_item_chars=shape.item_chars, listing_own_chars=shape.own_chars,
            listing_hints=tuple(hints), article_h1=shape.article_h1,
        )


_DATA_SCRIPTS = ("application/ld+json", "application/json", "text/template", "text/x-template", "importmap")
_MOUNT_CANDIDATES = frozenset({"div", "main", "section", "body", *_MOUNT_TAGS})
_SIGNAL_TAGS = ("a", *_MOUNT_CANDIDATES, "script", "input", "title", "h1", "noscript", "iframe")
_INVISIBLE = ("script", "style", "noscript", "template", "head", "title", "svg")


def _is_empty_mount(el: lxml.html.HtmlElement) -> bool:
    if el.tag not in _MOUNT_TAGS and el.get("id") not in _MOUNT_IDS and el.get("data-reactroot") is None:
        return False
    return len(_visible_text(el, enough=40)) < 40


def _visible_text(root: lxml.html.HtmlElement, enough: int | None = None) -> str:
    return _visible_texts(root, text_enough=enough, content_enough=0)[0]


def _collapsed(parts: list[str]) -> str:
    return " ".join(" ".join(parts).split())


def _visible_texts(root: lxml.html.HtmlElement, text_enough: int | None = None,
                   content_enough: int = 0) -> tuple[str, str, int]:
    """The visible text of ``root``, the part of it outside navigation containers, and the search
    fields outside them.

    With ``text_enough``: the walk stops once the text has at least that many characters and the
    content at least ``content_enough`` (the rules only look at the text of short pages): the
    texts are then the first ones, and the search fields those seen so far. A docs page's whole
    tree was walked in Python for a length compared with 1,500 at most. Once the text has enough,
    navigation is not walked any more: it adds to the text only, and a docs theme's sidebar (the
    whole site's table of contents, thousands of elements) often comes before the content."""
    parts: list[str] = []
    content: list[str] = []
    search_inputs = 0
    text_done, content_done = False, content_enough <= 0
    # Characters collected, before whitespace is collapsed; collapsing again only as they double.
    seen = content_seen = 0
    text_check, content_check = text_enough or 0, content_enough

    def add(text: str, in_nav: bool) -> bool:
        """Collect ``text``; whether there is enough now."""
        nonlocal seen, content_seen, text_check, content_check, text_done, content_done
        if text.isspace():
            return False  # what separates elements: the parts are joined with a space anyway
        parts.append(text)
        if not in_nav:
            content.append(text)
        if text_enough is None:
            return False
        if not text_done:
            seen += len(text)
            if seen >= text_check:
                text_done = len(_collapsed(parts)) >= text_enough
                text_check = 2 * seen
        if not content_done and not in_nav:
            content_seen += len(text)
            if content_seen >= content_check:
                content_done = len(_collapsed(content)) >= content_enough
                content_check = 2 * content_seen
        return text_done and content_done

    tag = root.tag
    if not isinstance(tag, str) or tag in _INVISIBLE:
        return "", "", 0
    in_nav = _is_navigation(root, tag)
    if tag == "input" and not in_nav and _is_search_field(root):
        search_inputs += 1
    if root.text and add(root.text, in_nav):
        return _collapsed(parts), _collapsed(content), search_inputs
    # Depth-first without recursion (generated pages can nest deeper than Python's limit), each
    # element's children read as they are reached: (children, in_nav, the element's tail and the
    # in_nav it counts under, once its children are done).
    frames: list = [(iter(root), in_nav, None)]
    while frames:
        children, in_nav, _ = frames[-1]
        child = None if in_nav and text_done else next(children, None)
        if child is None:
            tail = frames.pop()[2]
            if tail is not None and add(*tail):
                break
            continue
        tag = child.tag
        if not isinstance(tag, str) or tag in _INVISIBLE:
            if child.tail and add(child.tail, in_nav):
                break
            continue
        child_nav = in_nav or _is_navigation(child, tag)
        if child_nav and text_done:
            if child.tail and add(child.tail, in_nav):
                break
            continue
        if tag == "input" and not child_nav and _is_search_field(child):
            search_inputs += 1
        if child.text and add(child.text, child_nav):
            break
        frames.append((iter(child), child_nav, (child.tail, in_nav) if child.tail else None))
    return _collapsed(parts), _collapsed(content), search_inputs


def _is_navigation(el: lxml.html.HtmlElement, tag: str) -> bool:
    """A menu, sidebar, header or footer: a landmark, or a container whose class or id names one,
    unless it also holds the page's main content (a layout wrapper called "with-sidebar")."""
    role = el.get("role")
    if tag in _NAV_TAGS or (role and role in _NAV_ROLES):
        pass
    elif tag in _NAV_HOLDERS:
        ident = f"{el.get('class') or ''} {el.get('id') or ''}".lower()
        if not ident.strip():
            return False
        words = set(_WORD_SPLIT.split(ident))
        if words.isdisjoint(_NAV_WORDS) and not any(w.endswith(("sidebar", "navbar", "menu")) for w in words):
            return False
    else:
        return False
    return el.find(".//h1") is None and el.find(".//main") is None and el.find(".//article") is None \
        and not _ROLE_MAIN(el)


@dataclass(frozen=True)
class ListingShape:
    """The main content's run of similar items, each led by a link to a page of the site: the
    children of one element, of one tag, two or more, each holding a link (its title: in a heading,
    or a fifth of its text at least) and at most ITEM_TEXT characters. Entries of a list, posts of
    an archive, cards of a help centre's category, rows of search results. The main content is
    ``<main>``, else the element whose role is main, else the body; menus, sidebars, headers and
    footers in it count for nothing (``_is_navigation``)."""

    items: int = 0  # the distinct pages the outermost items link to
    item_chars: int = 0
    own_chars: int = 0  # the main content's text outside the items, up to what decides
    article_h1: bool = False
    entries: int = 0  # outermost items marked as entries: an <article>, a title link rel="bookmark", a <time>

    @property
    def needs_hints(self) -> bool:
        """Too few items to be a listing alone, and a listing with a hint."""
        own = ARTICLE_OWN_TEXT if self.article_h1 else LISTING_OWN_TEXT
        return (LISTING_HINTED_ITEMS <= self.items < LISTING_ITEMS and self.own_chars <= own
                and self.item_chars >= 2 * self.own_chars)

    @classmethod
    def read(cls, doc: lxml.html.HtmlElement, main: lxml.html.HtmlElement | None,
             h1: lxml.html.HtmlElement | None, url: str | None) -> ListingShape:
        region = main
        if region is None:
            region = next(iter(_ROLE_MAIN_ELEMENT(doc)), None)
        if region is None:
            region = doc.find("body")
        if region is None:
            return cls()
        items = _runs(region, _bare_host(url))
        for post, found in _copied_posts(region, url).items():
            items.setdefault(post, found)
        pages = {_page_key(href) for _, href, _ in items.values()}
        if len(pages) < LISTING_HINTED_ITEMS:
            return cls()
        outer = {item for item in items if not any(a in items for a in item.iterancestors())}
        item_chars = sum(items[item][0] for item in outer)
        entries = sum(1 for item in outer if item.tag == "article" or "bookmark" in (items[item][2].get("rel") or "")
                      or next(item.iter("time"), None) is not None)
        return cls(items=len(pages), item_chars=item_chars, own_chars=_own_chars(region, outer, LISTING_OWN_TEXT),
                   article_h1=_heads_an_article(h1, outer), entries=entries)


def _copied_posts(region: lxml.html.HtmlElement, url: str | None) -> dict[
        lxml.html.HtmlElement, tuple[int, str, lxml.html.HtmlElement]]:
    """The <article>s of ``region`` whose title (their first h1, else h2) is a link to their own page
    (``_permalink``), another page of the site, however long they are: a post shown whole on a front
    page (WordPress's, Pelican's featured post) is a copy of that page, where it is stored under its
    own URL and title."""
    if not url:
        return {}
    found = {}
    host = _bare_host(url)
    for post in region.iter("article"):
        # Its title: the first of its highest headings (a related post's h3 inside a post is not).
        heading = min(post.iter(*_HEADINGS), key=lambda h: h.tag, default=None)
        link = _permalink(heading) if heading is not None and heading.tag in ("h1", "h2") else None
        href = link.get("href") if link is not None else None
        if link is None or next(link.iterancestors("article")) is not post or not _is_site_link(href, host) \
                or _page_key(absolute_url(url, href or "") or href or "") == _page_key(url):
            continue
        found[post] = (len(" ".join(post.text_content().split())), href or "", link)
    return found


def _permalink(heading: lxml.html.HtmlElement) -> lxml.html.HtmlElement | None:
    """The heading's link to its post's own page: marked ``rel="bookmark"``, or holding the whole
    heading (not a category's name before the title)."""
    links = list(heading.iter("a"))
    marked = next((a for a in links if "bookmark" in (a.get("rel") or "").lower().split()), None)
    if marked is not None:
        return marked
    return links[0] if len(links) == 1 and _text(links[0]) == _text(heading) else None


def _runs(region: lxml.html.HtmlElement, host: str | None) -> dict[
        lxml.html.HtmlElement, tuple[int, str, lxml.html.HtmlElement]]:
    """The elements of ``region`` that are items of a run (``ListingShape``), outer and inner ones
    alike, with their text's length, their title link's href and the link."""
    navigation: dict[lxml.html.HtmlElement, bool] = {}
    columns: dict[lxml.html.HtmlElement, bool] = {}  # by parent: a column of bare links (_link_column)
    # (parent, tag of the children) -> each child holding a titled site link, with its first one
    groups: dict[tuple[lxml.html.HtmlElement, str], dict[lxml.html.HtmlElement, lxml.html.HtmlElement]] = {}
    looked = 0
    for link in region.iter("a"):
        href = link.get("href")
        if not _is_site_link(href, host):
            continue
        looked += 1
        if looked > LISTING_LINKS:
            break
        if len(link.text_content().strip()) < 3 and not _is_card_overlay(link):
            continue  # an image link, a pager's number
        if _in_navigation(link.getparent(), region, navigation):
            continue
        holders: list[lxml.html.HtmlElement] = []
        child = link
        while child is not None and child is not region and len(holders) <= _ITEM_DEPTH:
            holders.append(child)
            child = child.getparent()
        # A link is an item itself when it is a card (it holds a heading or a block) or one of a
        # column of bare links (Bootstrap's list-group); links in a line of text are not, their
        # line may be.
        parent = link.getparent()
        if parent is not None and parent not in columns:
            columns[parent] = _link_column(parent)
        if holders and next(link.iter(*_CARD_BLOCKS), None) is None and not columns.get(parent):
            holders.pop(0)
        for holder in holders[:_ITEM_DEPTH]:
            groups.setdefault((holder.getparent(), holder.tag), {}).setdefault(holder, link)
    items: dict[lxml.html.HtmlElement, tuple[int, str, lxml.html.HtmlElement]] = {}
    for members in groups.values():
        if len(members) >= 2:
            found = {member: (chars, title.get("href", ""), title) for member, title in members.items()
                     if (chars := _item_chars(member, title))}
            if len(found) >= 2:
                items.update(found)
    return items


def _page_key(href: str) -> str:
    """The page a site link leads to, however it is written (absolute or not)."""
    try:
        parts = urlsplit(href.strip())
    except ValueError:
        return href
    return f"{parts.path.rstrip('/')}?{parts.query}"


def _own_chars(region: lxml.html.HtmlElement, items: set[lxml.html.HtmlElement], enough: int) -> int:
    """The length of ``region``'s visible text outside ``items`` and navigation, counted until it
    passes ``enough``."""
    chars = 0
    todo = [region]
    while todo and chars <= enough:
        el = todo.pop()
        if el.text and not el.text.isspace():
            chars += len(" ".join(el.text.split())) + 1  # one space between texts
        for child in el:
            if child.tail and not child.tail.isspace():
                chars += len(" ".join(child.tail.split())) + 1
            tag = child.tag
            if (not isinstance(tag, str) or tag in _INVISIBLE or child in items
                    or (_is_navigation(child, tag) and not _is_entry_part(child))):
                continue
            todo.append(child)
    return chars


def _in_navigation(el: lxml.html.HtmlElement | None, region: lxml.html.HtmlElement,
                   known: dict[lxml.html.HtmlElement, bool]) -> bool:
    """Whether ``el`` is inside navigation below ``region`` (``known``: the answers so far)."""
    path = []
    found = False
    while el is not None and el is not region:
        cached = known.get(el)
        if cached is not None:
            found = cached
            break
        path.append(el)
        el = el.getparent()
    for ancestor in reversed(path):
        found = found or (_is_navigation(ancestor, ancestor.tag) and not _is_entry_part(ancestor))
        known[ancestor] = found
    return found


def _is_entry_part(el: lxml.html.HtmlElement) -> bool:
    """A header or footer of an <article> or <section> (a post's title and tags): no landmark."""
    return el.tag in ("header", "footer") and any(a.tag in ("article", "section") for a in el.iterancestors())


def _item_chars(member: lxml.html.HtmlElement, title: lxml.html.HtmlElement) -> int:
    """The length of ``member``'s text when it is an entry led by its link ``title`` (short, the
    link its heading or a fair share of its text), else 0."""
    raw = member.text_content()
    if len(raw) > 4 * ITEM_TEXT:
        return 0  # long enough whatever its whitespace
    chars = len(" ".join(raw.split()))
    if chars > ITEM_TEXT or not chars:
        return 0
    if member is title or len(_text(title)) * 5 >= chars or next(title.iter(*_HEADINGS), None) is not None \
            or _is_card_overlay(title):
        return chars
    return chars if any(el.tag in _HEADINGS for el in _ancestors_within(title, member)) else 0


def _link_column(parent: lxml.html.HtmlElement) -> bool:
    """Whether ``parent`` holds only links, two or more, with no text between or around them: links
    laid out as a column of blocks, not words of a sentence."""
    if (parent.text or "").strip():
        return False
    children = list(parent)
    return len(children) >= 2 and all(el.tag == "a" and not (el.tail or "").strip() for el in children)


def _is_card_overlay(link: lxml.html.HtmlElement) -> bool:
    """A link with no text but a name (``aria-label`` or ``title``) beside a heading: a card's
    "stretched link", laid by CSS over the whole card so that the heading itself is no link
    (Bootstrap's ``stretched-link``, Hugo PaperMod's ``entry-link``)."""
    if link.text_content().strip() or not (link.get("aria-label") or link.get("title") or "").strip():
        return False
    parent = link.getparent()
    return parent is not None and next(parent.iter(*_HEADINGS), None) is not None


def _ancestors_within(el: lxml.html.HtmlElement, top: lxml.html.HtmlElement) -> list[lxml.html.HtmlElement]:
    found = []
    for ancestor in el.iterancestors():
        if ancestor is top:
            break
        found.append(ancestor)
    return found


def _heads_an_article(h1: lxml.html.HtmlElement | None, items: set[lxml.html.HtmlElement]) -> bool:
    """Whether the page's h1 is inside an <article> that is not an item, nor inside one."""
    if h1 is None:
        return False
    ancestors = list(h1.iterancestors())
    return any(el.tag == "article" for el in ancestors) and items.isdisjoint(ancestors)


def _bare_host(url: str | None) -> str | None:
    if not url:
        return None
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host.removeprefix("www.") if host else None


def _is_site_link(href: str | None, host: str | None) -> bool:
    """Whether ``href`` leads to a page of the site whose host is ``host`` (any http one when None):
    a relative link or one to that host; not a fragment of the same page, not mail or scripts."""
    href = (href or "").strip()
    if not href or href[0] == "#":
        return False
    if href.startswith("//"):
        return host is None or _bare_host("http:" + href) == host
    if href[0] == "/" or ":" not in href:
        return True  # relative
    scheme = _SCHEME.match(href)
    if scheme is None:
        return True  # a relative path with a colon in it
    if scheme.group(1).lower() not in ("http", "https"):
        return False
    return host is None or _bare_host(href) == host


def _collection_schema(doc: lxml.html.HtmlElement, json_ld: list[str]) -> bool:
    """A schema.org CollectionPage, SearchResultsPage or ItemList, in JSON-LD or microdata."""
    return any(_COLLECTION_TYPE.search(text) for text in json_ld) or bool(_COLLECTION_ITEMTYPE(doc))


# An item's title link sits at most this deep in it: div > article > div > div > div > h1 > a in a
# theme built of utility classes (Hugo's Ananke).
_ITEM_DEPTH = 7
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_CARD_BLOCKS = (*_HEADINGS, "div", "p", "article", "section", "li")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
_ROLE_MAIN_ELEMENT = etree.XPath("(.//*[@role='main'])[1]")
_PAGINATION = etree.XPath(
    "boolean(//link[@rel='next' or @rel='prev' or @rel='previous'] | "
    "//a[contains(concat(' ', normalize-space(@rel), ' '), ' next ') or "
    "contains(concat(' ', normalize-space(@rel), ' '), ' prev ')])")
# Titles of archives: "Category: Python", "Posts tagged 'rust'", "Author: Ada", "March 2024",
# "Blog - Page 2", "Search results for ...", "Archives".
_ARCHIVE_TITLE = re.compile(
    r"^\s*(categor(y|ies)|tag(s|ged)?|topics?|archives?|authors?|(posts?|articles?|entries|stories) "
    r"(by|tagged|in|from|about|for|on)|all (posts|articles)|search results|results for|"
    r"(january|february|march|april|may|june|july|august|september|october|november|december) \d{4})\b"
    r"|\b(archives?|page \d+( of \d+)?)\s*($|[|\-\u2013\u2014:\u00b7])",
    re.IGNORECASE,
)
# Blog engines and their SEO plugins (Hugo's and Jekyll's Open Graph templates, Yoast) give a post
# og:type "article" and every other page, a home, a tag or a section page, "website".
_OG_WEBSITE = etree.XPath("boolean(//meta[@property='og:type' and normalize-space(@content)='website'])")
# A help centre's category and section pages sit under a trail (Home > Category > Section).
_BREADCRUMB = etree.XPath(
    "boolean(//*[contains(translate(@class, 'B', 'b'), 'breadcrumb') or contains(translate(@id, 'B', 'b'), "
    "'breadcrumb') or contains(translate(@aria-label, 'B', 'b'), 'breadcrumb')])")
_COLLECTION_TYPE = re.compile(
    r'"@type"\s*:\s*(\[[^\]]*?)?"(https?://schema\.org/)?(CollectionPage|SearchResultsPage|ItemList)"')
_COLLECTION_ITEMTYPE = etree.XPath(
    "boolean(//*[contains(@itemtype, 'CollectionPage') or contains(@itemtype, 'SearchResultsPage') or "
    "contains(@itemtype, 'schema.org/ItemList')])")


def _is_search_field(el: lxml.html.HtmlElement) -> bool:
    kind = (el.get("type") or "text").lower()
    if kind == "search":
        return True
    return kind == "text" and (el.get("name") or "").lower() in _SEARCH_FIELDS


# Every alternative of _CAPTCHA_MARKUP holds one of these, so a page without any is told apart
# without running the regex over 200 KB. Case folding matches them as widely as the regex's
# IGNORECASE does: none holds an i, k or s, the letters IGNORECASE also matches to other letters.
_CAPTCHA_WORDS = ("captcha", "cf-turn", "challenge-platform", "cf-chl-", "cf_chl_")


def _has_captcha_markup(raw: str) -> bool:
    folded = raw.casefold()
    return any(word in folded for word in _CAPTCHA_WORDS) and bool(_CAPTCHA_MARKUP.search(raw))


def _text(el: lxml.html.HtmlElement | None) -> str:
    return " ".join(el.text_content().split()) if el is not None else ""


def _parse(html: str | bytes) -> lxml.html.HtmlElement | None:
    if not html or not html.strip():
        return None
    try:
        return document_fromstring(html)
    except (etree.ParserError, ValueError):
        try:
            return document_fromstring(html.encode("utf-8") if isinstance(html, str) else html)
        except (etree.ParserError, ValueError):
            return None
