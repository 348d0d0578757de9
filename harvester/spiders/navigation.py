"""Where documentation sites put their prev/next pager and their table of contents.

One selector list per job, covering the generators a docs crawl meets most often. Selectors are
CSS (parsel); each returns anchors or ``<link>`` elements whose ``href`` is followed.
"""

from __future__ import annotations

from lxml import etree
from parsel import Selector
from parsel.csstranslator import HTMLTranslator

PAGER_SELECTORS: tuple[str, ...] = (
    "link[rel~=next]", "link[rel~=prev]", "link[rel~=previous]",
    "a[rel~=next]", "a[rel~=prev]", "a[rel~=previous]",
    # Sphinx (classic/alabaster/pallets "related" bar, RTD footer, Furo, PyData)
    "div.related a[accesskey=N]", "div.related a[accesskey=P]",
    "a.next-page", "a.prev-page", "a.prev-next-footer", "a.left-prev", "a.right-next",
    # MkDocs / Material
    "a.md-footer__link", "a.md-flex", "div.rst-footer-buttons a",
    # Docusaurus
    "a.pagination-nav__link",
    # mdBook
    "a.nav-chapters", "a.mobile-nav-chapters",
    # VitePress
    "a.pager-link", ".VPDocFooter .pager a",
    # GitBook
    "a[data-testid=pagination-next]", "a[data-testid=pagination-previous]",
    # DocBook (navheader/navfooter)
    "div.navfooter a[accesskey=n]", "div.navfooter a[accesskey=p]",
    "div.navheader a[accesskey=n]", "div.navheader a[accesskey=p]",
)

TOC_SELECTORS: tuple[str, ...] = (
    # Sphinx: in-page toctrees and the sidebar navigation of the common themes
    "div.toctree-wrapper a", "div.sphinxsidebar a", "nav.wy-nav-side a",
    "div.wy-menu a", "div.sidebar-tree a", "nav.bd-docs-nav a", "nav.bd-links a",
    # MkDocs / Material
    "nav.md-nav a", "div.wy-menu-vertical a",
    # Docusaurus
    "a.menu__link",
    # mdBook
    "nav.sidebar a", "ol.chapter a",
    # VitePress
    ".VPSidebar a",
    # GitBook / generic docs sidebars
    "aside nav a", "nav[aria-label*=ocs] a", "nav[aria-label*=ection] a",
    # DocBook
    "div.toc a",
)

# Links inside the page body: a docs site links pages from prose that no menu lists (changelogs,
# "see also" notes). Followed last, they make the docs spider as complete as the site spider.
CONTENT_SELECTORS: tuple[str, ...] = (
    "[role=main] a", "main a", "article a", "div.body a", "div.document a", "div.content a",
)



def _href_xpath(selectors: tuple[str, ...]) -> etree.XPath:
    """The ``href``s of the elements any of ``selectors`` matches, in document order: what
    ``page.css(", ".join(selectors)).xpath("@href")`` gives, compiled once, without a Selector per
    element."""
    elements = HTMLTranslator().css_to_xpath(", ".join(selectors))
    return etree.XPath(f"({elements})/@href", smart_strings=False)


_PAGER = _href_xpath(PAGER_SELECTORS)
_TOC = _href_xpath(TOC_SELECTORS)
_CONTENT = _href_xpath(CONTENT_SELECTORS)


def pager_links(page: Selector) -> list[str]:
    """The raw ``href``s of a page's prev/next navigation, in document order."""
    return _hrefs(page, _PAGER)


def toc_links(page: Selector) -> list[str]:
    """The raw ``href``s of a page's table of contents and docs sidebar."""
    return _hrefs(page, _TOC)


def content_links(page: Selector) -> list[str]:
    """The raw ``href``s of links in the page's main content."""
    return _hrefs(page, _CONTENT)


def _hrefs(page: Selector, hrefs: etree.XPath) -> list[str]:
    seen: dict[str, None] = {}
    for href in hrefs(page.root):
        href = href.strip()
        if href and not href.startswith(("#", "javascript:", "mailto:")):
            seen.setdefault(href, None)
    return list(seen)
