"""A docs-like site written from a shared bank of paragraphs, as templated knowledge-base articles,
generated reference pages and tutorials that restate each other are: every page holds a few bank
paragraphs (each also on other pages) and a paragraph of its own. Beside them: a section index
with an introduction, a page served at three URLs (a copy group), and a print view of everything."""

from __future__ import annotations

from textwrap import dedent

from tests.servers.sites import _book_prose
from tests.servers.sitesrv import Route

BANK = [" ".join(_book_prose(1000 + n, 3)) for n in range(16)]
PAGES = 12
GUIDE_PATHS = ("/docs/guide.html", "/docs/mirror/guide.html", "/docs/guide-copy.html")


def own_paragraph(name: str) -> str:
    """The paragraph only the page ``name`` holds (two sentences)."""
    return " ".join(_book_prose(5000 + sum(map(ord, name)) * 7 + len(name), 2))


def page_paragraphs(number: int) -> list[str]:
    """Page ``number``'s paragraphs: four of the bank (each on about three pages), then its own."""
    return [BANK[(number * 3 + k * 7) % len(BANK)] for k in range(4)] + [own_paragraph(f"page{number}")]


def section_paragraphs() -> list[str]:
    """The section index: an introduction of its own, then the bank paragraphs its pages hold."""
    return [own_paragraph("section"), *BANK[:5]]


def guide_paragraphs() -> list[str]:
    """The guide: bank paragraphs only, each on other pages (it looks like an aggregate)."""
    return BANK[5:11]


def _page(title: str, paragraphs: list[str], links: list[str]) -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    nav = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return dedent(f"""\
        <!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title} - Kalo docs</title></head>
        <body><nav><ul>{nav}</ul></nav><main><article><h1>{title}</h1>{body}</article></main></body></html>""")


def bank_site() -> tuple[dict[str, Route], dict[str, list[str]], str]:
    """The routes, each content page's paragraphs by path, and the start path.

    The crawl starts at the guide, whose only links are its two copies; they lead to the section
    index, which links every page; the last page links the print view (every page's text)."""
    pages = {f"/docs/page{n}.html": page_paragraphs(n) for n in range(PAGES)}
    texts = {"/docs/index.html": section_paragraphs(), **pages}
    routes = {"/robots.txt": Route("User-agent: *\nDisallow:\n", headers={"Content-Type": "text/plain"})}
    for path in GUIDE_PATHS:
        links = list(GUIDE_PATHS[1:]) if path == GUIDE_PATHS[0] else ["/docs/index.html"]
        routes[path] = Route(_page("Guide", guide_paragraphs(), links))
        texts[path] = guide_paragraphs()
    routes["/docs/index.html"] = Route(_page("Storage", section_paragraphs(), list(pages)))
    for number, (path, paragraphs) in enumerate(pages.items()):
        links = ["/docs/index.html"] + (["/docs/print.html"] if number == PAGES - 1 else [])
        routes[path] = Route(_page(f"Topic {number}", paragraphs, links))
    everything = [p for paragraphs in pages.values() for p in paragraphs]
    routes["/docs/print.html"] = Route(_page("All topics", everything, ["/docs/index.html"]))
    return routes, texts, GUIDE_PATHS[0]
