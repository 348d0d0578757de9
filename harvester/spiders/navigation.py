"""Where documentation sites put their prev/next pager and their table of contents.

One selector list per job, covering the generators a docs crawl meets most often. Selectors are
CSS (parsel); each returns anchors or ``<link>`` elements whose ``href`` is followed.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import cssselect
from cssselect.parser import Class, CombinedSelector
from cssselect.parser import Element as CElement
from lxml import etree
from parsel.csstranslator import HTMLTranslator

if TYPE_CHECKING:
    from parsel import Selector

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


class _HrefXPath:
    """The ``href``s of the elements any of ``selectors`` matches, in document order: what
    ``page.css(", ".join(selectors)).xpath("@href")`` gives.

    cssselect's XPath is a union of one descendant scan per selector, and libxml2 walks the tree
    for each, which is slow on a large API page. Most selectors are another generator's and name
    a class the page never uses: only those the page's class names allow are evaluated (one
    compiled XPath per set of selectors, the first ``MAX_COMPILED`` kept), and those of a single
    compound are joined, per tag, into one scan.
    """

    # A site's pages use a few sets; a hostile one could make a new set on every page.
    MAX_COMPILED = 64

    def __init__(self, selectors: tuple[str, ...]) -> None:
        self._css = ", ".join(selectors)
        self._compiled: dict[tuple[int, ...], etree.XPath] = {}

    @functools.cached_property
    def _selectors(self) -> list[tuple[frozenset[str], str, str | None, str]]:
        """Per selector: the classes it needs, and its XPath (a combined selector) or its tag and
        the test of an element with that tag (a single compound). Worked out on first use: every
        crawl imports this module (Scrapy imports every spider's), only the docs spider uses it."""
        translator = HTMLTranslator()
        selectors = []
        for parsed in cssselect.parse(self._css):
            tree = parsed.parsed_tree
            if isinstance(tree, CombinedSelector):
                selectors.append((_needed_classes(tree), translator.selector_to_xpath(parsed), None, ""))
            else:
                compound = translator.xpath(tree)
                selectors.append((_needed_classes(tree), "", compound.element, compound.condition or "true()"))
        return selectors

    def __call__(self, root: Any, page_classes: set[str]) -> list[str]:
        wanted = tuple(i for i, (classes, *_) in enumerate(self._selectors) if classes <= page_classes)
        if not wanted:
            return []
        xpath = self._compiled.get(wanted)
        if xpath is None:
            xpath = self._compile(wanted)
            if len(self._compiled) < self.MAX_COMPILED:
                self._compiled[wanted] = xpath
        return xpath(root)

    def _compile(self, wanted: tuple[int, ...]) -> etree.XPath:
        scans, tests_by_tag = [], {}
        for i in wanted:
            _, path, element, test = self._selectors[i]
            if element is None:
                scans.append(path)
            else:
                tests_by_tag.setdefault(element, []).append(test)
        scans += [f"descendant-or-self::{element}[{' or '.join(f'({test})' for test in tests)}]"
                  for element, tests in tests_by_tag.items()]
        return etree.XPath(f"({' | '.join(scans)})/@href", smart_strings=False)


def _needed_classes(tree: Any) -> frozenset[str]:
    """The class names a parsed selector needs on its elements (not those of a ``:not()``)."""
    needed = set()
    compounds = [tree]
    while compounds:
        node = compounds.pop()
        if isinstance(node, CombinedSelector):
            compounds += [node.selector, node.subselector]
            continue
        while not isinstance(node, CElement):
            if isinstance(node, Class):
                needed.add(node.class_name)
            node = node.selector
    return frozenset(needed)


_CLASS_VALUES = etree.XPath("descendant-or-self::*/@class", smart_strings=False)


def page_classes(page: Selector) -> set[str]:
    """Every class name used on the page."""
    return set(" ".join(_CLASS_VALUES(page.root)).split())


_PAGER = _HrefXPath(PAGER_SELECTORS)
_TOC = _HrefXPath(TOC_SELECTORS)
_CONTENT = _HrefXPath(CONTENT_SELECTORS)


def pager_links(page: Selector, classes: set[str] | None = None) -> list[str]:
    """The raw ``href``s of a page's prev/next navigation, in document order (``classes``: the
    page's, when the caller has them)."""
    return _hrefs(page, _PAGER, classes)


def toc_links(page: Selector, classes: set[str] | None = None) -> list[str]:
    """The raw ``href``s of a page's table of contents and docs sidebar."""
    return _hrefs(page, _TOC, classes)


def content_links(page: Selector, classes: set[str] | None = None) -> list[str]:
    """The raw ``href``s of links in the page's main content."""
    return _hrefs(page, _CONTENT, classes)


_BODY_LINKS = etree.XPath("//body//a/@href")


def body_links(page: Selector) -> list[str]:
    """The raw ``href``s of every link in the page's body: the docs spider's last resort on a page
    where no pager, table of contents or content element is recognised (a hand-made manual)."""
    return _unique_hrefs(_BODY_LINKS(page.root))


def _hrefs(page: Selector, hrefs: _HrefXPath, classes: set[str] | None) -> list[str]:
    return _unique_hrefs(hrefs(page.root, page_classes(page) if classes is None else classes))


def _unique_hrefs(found) -> list[str]:
    seen: dict[str, None] = {}
    for href in found:
        href = href.strip()
        if href and not href.startswith(("#", "javascript:", "mailto:")):
            seen.setdefault(href, None)
    return list(seen)
