"""Small purpose-built websites for crawl tests, as routes for ``SiteServer``."""

from __future__ import annotations

import gzip
from textwrap import dedent

from tests.sitesrv import Route

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
    archive = "".join(f'<li><a href="/elsewhere/p{i}.html">Post number {i} of the archive</a></li>' for i in range(40))
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
