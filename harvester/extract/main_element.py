"""Finding the main element of a page (Scrapy-free): the first element with text that a selector
matches, else the generic candidates of a page no profile names one for."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lxml.html import HtmlElement

__all__ = ["Scan", "first_with_text", "generic_candidates", "has_text", "scan_document"]

_UNTRUSTED_RANK = 10


def first_with_text(root: HtmlElement,
                    xpaths: Iterable[Callable[[HtmlElement], list[HtmlElement]]]) -> HtmlElement | None:
    """The first element with text that one of ``xpaths`` (compiled selectors, tried in order)
    matches under ``root``."""
    for xp in xpaths:
        for el in xp(root):
            if has_text(el):
                return el
    return None


@dataclass
class Scan:
    """Elements of interest found in one pass over the document."""

    mains: list = field(default_factory=list)
    crumbs: list = field(default_factory=list)
    scripts: list = field(default_factory=list)


# Tags that can be a main element or a breadcrumb container. Iterating only
# these (a C-level filter) skips the thousands of <span>s of highlighted
# code; a Python pass over them beats one XPath with several contains().
_SCAN_TAGS = ("div", "main", "article", "nav", "ul", "ol", "section", "script")


def scan_document(doc: HtmlElement) -> Scan:
    sc = Scan()
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


def generic_candidates(sc: Scan) -> Iterator[tuple[HtmlElement, bool]]:
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
        if has_text(el):
            yield el, rank < _UNTRUSTED_RANK


def has_text(el: HtmlElement) -> bool:
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
