"""Small purpose-built websites for crawl tests, as routes for ``SiteServer``."""

from __future__ import annotations

import gzip
from textwrap import dedent

from tests.servers.sitesrv import Route

PROSE = (
    "This page explains how the {name} component of the frobnicator works, which settings it "
    "reads and what it returns. Read it before you configure a production deployment."
)


def doc_page(name: str, *, next_href: str | None = None, prev_href: str | None = None,
             sidebar: list[str] = (), extra_body: str = "", title: str | None = None) -> str:
    """A Sphinx-like documentation page with a head link, a related bar and a sidebar."""
    title = title or f"The {name} guide"
    head_links = "".join(
        f'<link rel="{rel}" href="{href}">' for rel, href in (("next", next_href), ("prev", prev_href)) if href
    )
    related = "".join(
        f'<a href="{href}" accesskey="{key}">{label}</a>'
        for href, key, label in ((next_href, "N", "next"), (prev_href, "P", "previous")) if href
    )
    toc = "".join(f'<li><a href="{href}">{href}</a></li>' for href in sidebar)
    return dedent(f"""\
        <!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title} — Frob docs</title>
        {head_links}</head><body>
        <div class="related" role="navigation"><ul><li>{related}</li></ul></div>
        <div class="document"><div class="body" role="main">
        <h1>{title}</h1>
        <p>{PROSE.format(name=name)}</p>
        <h2>Configuring {name}</h2>
        <p>Set the <code>{name}_level</code> option in your settings file to tune {name}.</p>
        <div class="highlight-python"><div class="highlight"><pre>def configure_{name}(app):
    app.config["{name.upper()}_LEVEL"] = 3
    return app
</pre></div></div>
        {extra_body}
        </div></div>
        <div class="sphinxsidebar" role="navigation"><h3>Navigation</h3><ul>{toc}</ul></div>
        <div class="footer">&copy; Frob authors</div>
        </body></html>""")


def chain_site() -> dict[str, Route]:
    """/docs/p1..p6: a rel=next chain p1->p2->p3->(missing) and p4->p6->p1 (a cycle); p5 is only in
    the sidebar. The sidebar also links an out-of-prefix page and a generated index."""
    sidebar = [f"/docs/p{i}.html" for i in range(1, 7)] + ["/blog/news.html", "/docs/genindex.html"]
    nexts = {1: "p2.html", 2: "p3.html", 3: "missing.html", 4: "p6.html", 6: "p1.html"}
    routes = {
        f"/docs/p{i}.html": Route(doc_page(f"part{i}", next_href=nexts.get(i), sidebar=sidebar))
        for i in range(1, 7)
    }
    routes["/blog/news.html"] = Route(doc_page("news"))
    routes["/docs/genindex.html"] = Route(doc_page("index"))
    routes["/robots.txt"] = Route("User-agent: *\nDisallow:\n", headers={"Content-Type": "text/plain"})
    return routes


def _urlset(urls: list[str]) -> str:
    entries = "".join(f"<url><loc>{u}</loc><lastmod>2026-01-01</lastmod></url>" for u in urls)
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'


def sitemap_index(base: str, plain: list[str], gzipped: list[str]) -> dict[str, Route]:
    """robots.txt -> /sitemap.xml (an index) -> /sitemaps/a.xml and the gzipped /sitemaps/b.xml.gz."""
    index = (
        '<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{base}sitemaps/a.xml</loc></sitemap>"
        f"<sitemap><loc>{base}sitemaps/b.xml.gz</loc></sitemap></sitemapindex>"
    )
    return {
        "/robots.txt": Route(f"User-agent: *\nDisallow:\nSitemap: {base}sitemap.xml\n",
                             headers={"Content-Type": "text/plain"}),
        "/sitemap.xml": Route(index, headers={"Content-Type": "application/xml"}),
        "/sitemaps/a.xml": Route(_urlset(plain), headers={"Content-Type": "application/xml"}),
        "/sitemaps/b.xml.gz": Route(gzip.compress(_urlset(gzipped).encode()),
                                    headers={"Content-Type": "application/x-gzip"}),
    }


def sitemap_site(base: str) -> dict[str, Route]:
    """Four docs pages listed across a sitemap index with a gzipped child, plus one out-of-prefix URL."""
    routes = sitemap_index(
        base,
        [f"{base}docs/a1.html", f"{base}docs/a2.html", f"{base}blog/post.html"],
        [f"{base}docs/b1.html", f"{base}docs/b2.html"],
    )
    for name in ("a1", "a2", "b1", "b2"):
        routes[f"/docs/{name}.html"] = Route(doc_page(name))
    routes["/docs/"] = Route(doc_page("home"))
    routes["/blog/post.html"] = Route(doc_page("post"))
    return routes


def robots_site(crawl_delay: float) -> dict[str, Route]:
    """/docs/ links four pages, one of them under a section robots.txt disallows."""
    links = ["/docs/one.html", "/docs/two.html", "/docs/three.html", "/docs/private/secret.html"]
    body = "<ul>" + "".join(f'<li><a href="{href}">{href}</a></li>' for href in links) + "</ul>"
    routes = {"/docs/": Route(doc_page("home", extra_body=body))}
    for href in links:
        routes[href] = Route(doc_page(href.rsplit("/", 1)[1].removesuffix(".html")))
    routes["/robots.txt"] = Route(
        f"User-agent: *\nDisallow: /docs/private/\nCrawl-delay: {crawl_delay}\n",
        headers={"Content-Type": "text/plain"},
    )
    return routes


def broken_pages_site() -> dict[str, Route]:
    """/docs/ links good pages and bad ones: a 500, binary bytes labelled HTML, an empty page,
    malformed HTML."""
    links = ["good1.html", "good2.html", "error.html", "binary.html", "empty.html", "malformed.html",
             "archive.html"]
    body = "<ul>" + "".join(f'<li><a href="{href}">{href}</a></li>' for href in links) + "</ul>"
    malformed = doc_page("malformed").replace("</div>", "").replace("</p>", "<p><b><i>unclosed")
    # Links to another site: a list of this site's own pages would be a listing, followed but not stored.
    archive = "".join(f'<li><a href="https://elsewhere.example/p{i}.html">Post number {i} of the archive</a></li>'
                      for i in range(40))
    return {
        "/docs/archive.html": Route(f"<html><head><title>Archive</title></head><body><main><h1>Archive</h1>"
                                    f"<ul>{archive}</ul></main></body></html>"),
        "/docs/": Route(doc_page("home", extra_body=body)),
        "/docs/good1.html": Route(doc_page("good1")),
        "/docs/good2.html": Route(doc_page("good2")),
        "/docs/error.html": Route("<h1>Internal error</h1>", 500),
        "/docs/binary.html": Route(bytes(range(256)) * 64),
        "/docs/empty.html": Route("<html><head><title>Empty</title></head><body><nav><a href='good1.html'>x</a></nav></body></html>"),
        "/docs/malformed.html": Route(malformed),
        "/robots.txt": Route("User-agent: *\nDisallow:\n", headers={"Content-Type": "text/plain"}),
    }


DEDUP_ADMONITION = (
    "Frob 1.x reaches its end of life in June 2027. Plan your upgrade to Frob 2 before then; "
    "security fixes stop on that date."
)
_API_WORDS = (
    "The frobnicate function takes a widget, a mode and an optional timeout. It validates the widget "
    "against the registry, acquires the widget lock, applies the mode and returns the new state. "
    "When the timeout expires before the lock is acquired, it raises FrobTimeout and leaves the "
    "widget unchanged. Modes are fast, careful and paranoid; paranoid checks every invariant twice "
    "and is meant for tests. "
)


def _dedup_page(name: str, links: list[str], *, body: str = "", head: str = "") -> str:
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return dedent(f"""\
        <!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{name} — Frob docs</title>
        {head}</head><body>
        <div class="document"><div class="body" role="main">
        <h1>{name}</h1>
        <p>{PROSE.format(name=name)}</p>
        {body or f"<p>The {name} page has its own words about {name} and nothing else.</p>"}
        <ul>{anchors}</ul>
        <h2>Support policy</h2>
        <div class="admonition warning"><p class="admonition-title">Warning</p><p>{DEDUP_ADMONITION}</p></div>
        </div></div>
        <div class="sphinxsidebar" role="navigation"><ul>{anchors}</ul></div>
        </body></html>""")


def dedup_site() -> dict[str, Route]:
    """/docs/: one page under many URLs, a near-duplicate versioned copy, a repeated admonition.

    - ``/docs/`` and ``/docs/index.html`` serve the home page; links to the guide carry tracking and
      session parameters (``?utm_source=..``, ``;jsessionid=..``, ``?gclid=..#frag``);
    - ``/docs/print/guide.html`` is the guide again (same content, another URL);
    - ``/docs/old-topic.html`` redirects (301) to ``/docs/renamed.html``, linked nowhere else;
    - ``/docs/legacy.html`` names ``/docs/modern.html`` as its canonical URL (same content);
    - ``/docs/sub/index.html`` redirects to ``/docs/sub/``; the sub page then links
      ``/docs/other/index.html``, which the site also serves at ``/docs/other/``;
    - ``/docs/en/1.2/api.html`` and ``/docs/en/1.3/api.html`` differ by one word;
    - every page ends with the same "Support policy" warning.
    """
    home_links = [
        "index.html", "./", "guide.html?utm_source=newsletter&utm_medium=email",
        "guide.html;jsessionid=0A1B2C3D", "guide.html?gclid=abc123#install", "print/guide.html",
        "old-topic.html", "legacy.html", "sub/index.html", "en/1.2/api.html", "en/1.3/api.html",
    ] + [f"topic{i}.html" for i in range(1, 7)]
    home = _dedup_page("Frob home", home_links)
    guide = _dedup_page("Installation guide", ["/docs/index.html"],
                        body="<p>Install Frob with pip, then run frob init in your project.</p>")
    canonical = _dedup_page("Modern API", ["/docs/index.html"], head='<link rel="canonical" href="/docs/modern.html">',
                            body="<p>The modern API replaces the legacy calls one for one.</p>")
    other = _dedup_page("Other things", ["../index.html"])

    def api(version: str, word: str) -> str:
        return _dedup_page(f"API reference {version}", ["../../index.html"],
                           body=f"<p>{(_API_WORDS * 3).replace('paranoid checks', word + ' checks', 1)}</p>")

    html = {"Content-Type": "text/html; charset=utf-8"}
    routes = {
        "/docs/": Route(home), "/docs/index.html": Route(home),
        "/docs/guide.html": Route(guide), "/docs/print/guide.html": Route(guide),
        "/docs/old-topic.html": Route(b"", 301, {"Location": "/docs/renamed.html"}),
        "/docs/renamed.html": Route(_dedup_page("Renamed topic", ["/docs/index.html"])),
        "/docs/legacy.html": Route(canonical), "/docs/modern.html": Route(canonical),
        "/docs/sub/index.html": Route(b"", 301, {"Location": "/docs/sub/"}),
        "/docs/sub/": Route(_dedup_page("Sub section", ["../other/index.html"])),
        "/docs/other/": Route(other), "/docs/other/index.html": Route(other),
        "/docs/en/1.2/api.html": Route(api("1.x", "paranoid")),
        "/docs/en/1.3/api.html": Route(api("1.x", "thorough")),
        "/robots.txt": Route("User-agent: *\nDisallow:\n", headers={"Content-Type": "text/plain"}),
    }
    for i in range(1, 7):
        routes[f"/docs/topic{i}.html"] = Route(_dedup_page(f"Topic {i}", ["index.html"]), headers=html)
    return routes


_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po", "da", "fe", "gu", "hi", "jo", "be")
BOOK_CHAPTERS = ("Ownership", "Borrowing", "Lifetimes", "Traits", "Closures", "Iterators", "Macros", "Testing")


def _book_prose(seed: int, sentences: int) -> list[str]:
    """Deterministic sentences of made-up words, distinct for each seed."""
    import random

    rng = random.Random(seed)
    words = ["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(400)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(9, 16))).capitalize() + "."
            for _ in range(sentences)]


def _book_chapter_body(number: int, anchor_prefix: str = "") -> str:
    """A chapter's <main> content: a title, three sections of prose; anchors as mdBook writes them
    (the print page prefixes them)."""
    title = BOOK_CHAPTERS[number - 1]
    sections = []
    for section in range(3):
        sentences = _book_prose(number * 10 + section, 8)
        paragraphs = "".join(f"<p>{' '.join(sentences[i:i + 4])}</p>" for i in (0, 4))
        slug = f"{anchor_prefix}section-{section + 1}"
        sections.append(f'<h2 id="{slug}"><a class="header" href="#{slug}">{title} part {section + 1}</a></h2>'
                        f"{paragraphs}")
    top = f"{anchor_prefix}{title.lower()}"
    return f'<h1 id="{top}"><a class="header" href="#{top}">{title}</a></h1>' + "".join(sections)


def _book_page(title: str, main: str, *, sidebar: bool, next_href: str | None) -> str:
    chapters = "".join(f'<li class="chapter-item"><a href="ch{i}.html">{i}. {name}</a></li>'
                       for i, name in enumerate(BOOK_CHAPTERS, 1))
    nav = f'<nav id="sidebar" class="sidebar"><div class="sidebar-scrollbox"><ol class="chapter">{chapters}</ol></div></nav>'
    pager = (f'<nav class="nav-wrapper"><a rel="next" class="nav-chapters" href="{next_href}">Next</a></nav>'
             if next_href else "")
    return dedent(f"""\
        <!DOCTYPE html><html lang="en"><head><!-- Book generated using mdBook -->
        <meta charset="UTF-8"><title>{title} - The Kalo Book</title></head><body>
        {nav if sidebar else ""}
        <div id="page-wrapper" class="page-wrapper"><div class="page">
        <div id="menu-bar" class="menu-bar"><h1 class="menu-title">The Kalo Book</h1>
        <div class="right-buttons"><a href="print.html" title="Print this book">Print</a></div></div>
        <div id="content" class="content"><main>{main}</main>{pager}</div>
        </div></div></body></html>""")


def book_site(*, print_first: bool) -> tuple[dict[str, Route], str]:
    """An mdBook-like book: eight chapters and ``print.html``, the whole book on one page (chapter
    by chapter, anchors prefixed as mdBook does); and the start path.

    ``print_first``: start at ``print.html``, whose sidebar leads to the chapters, so the print page
    is the first page processed. Otherwise start at ``ch1.html``; each chapter only leads to the
    next one (no sidebar), and the last one to ``print.html``, so the print page comes last.
    """
    count = len(BOOK_CHAPTERS)
    routes = {}
    for number in range(1, count + 1):
        next_href = f"ch{number + 1}.html" if number < count else "print.html"
        routes[f"/book/ch{number}.html"] = Route(_book_page(
            BOOK_CHAPTERS[number - 1], _book_chapter_body(number), sidebar=print_first, next_href=next_href))
    whole = "".join(_book_chapter_body(number, anchor_prefix=f"ch{number}-") for number in range(1, count + 1))
    routes["/book/print.html"] = Route(_book_page("The Kalo Book", whole, sidebar=True, next_href=None))
    return routes, "/book/print.html" if print_first else "/book/ch1.html"


def book_sentence(chapter: int, section: int, index: int) -> str:
    """One sentence of the book, to search for."""
    return _book_prose(chapter * 10 + section, 8)[index]
