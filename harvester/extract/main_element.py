"""Finding the main element of a page (Scrapy-free): the first element with text that a selector
matches, else the generic candidates of a page no profile names one for."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lxml.html import HtmlElement

__all__ = ["Scan", "first_with_text", "generic_candidates", "has_text", "named_container", "scan_document"]

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
    bodies = _article_bodies(sc.mains)
    if len(bodies) > 1:
        parent = bodies[0].getparent()
        if parent is not None and parent.tag != "body" and all(body.getparent() is parent for body in bodies):
            ranked.append((0, -1, parent))  # one story's sections, each marked as its body
    for order, el in enumerate(sc.mains):
        rank = None if len(bodies) > 1 and el.get("itemprop") == "articleBody" else _main_rank(el, articles)
        if rank is not None:
            ranked.append((rank, order, el))
    ranked.sort(key=lambda r: (r[0], r[1]))
    for rank, _, el in ranked:
        if has_text(el):
            yield el, rank < _UNTRUSTED_RANK


def _article_bodies(mains: list[HtmlElement]) -> list[HtmlElement]:
    """The page's schema.org ``articleBody`` elements that no other one holds or says the same as. A
    page has one article body: several are the sections of one story (siblings), else the excerpts
    of the cards that link other stories, none of them this page's."""
    bodies = [el for el in mains if el.get("itemprop") == "articleBody"]
    if len(bodies) < 2:
        return bodies
    outer, texts = [], set()
    for el in bodies:
        text = " ".join(el.text_content().split())
        if text not in texts and not any(other in bodies for other in el.iterancestors()):
            outer.append(el)  # a copy of one before (a hidden microdata block's) is the same body
            texts.add(text)
    return outer


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


# A container's id or class says it holds the content ("page-content", "mainContent", "entry")...
_CONTENT_NAMES = frozenset({"content", "article", "post", "entry", "story"})
# ...unless it also names something beside the content.
_ASIDE_NAMES = frozenset({
    "comment", "comments", "sidebar", "nav", "navigation", "menu", "header", "footer", "related", "share",
    "social", "widget", "promo", "banner", "toc", "breadcrumb", "breadcrumbs",
})
_NAME_PARTS = re.compile(r"[-_\s]+|(?<=[a-z])(?=[A-Z])")
# The container holds at least this share of the page's text outside links.
_CONTAINER_SHARE = 0.7
# Subheadings, each followed by a paragraph of this much prose, that make a container's page a
# document rather than a story.
_DOCUMENT_HEADINGS = 3
_SECTION_PROSE = 80


def named_container(root: HtmlElement) -> HtmlElement | None:
    """The element a page without a main element names as its content, when the page is a document.

    Hand-made and old documentation (Apache's manual, product help written in a CMS) marks its
    content with a name, not with ``main``. The innermost ``div`` or ``section`` whose id or class
    says "content" and that holds most of the page's text outside links is taken, when it holds
    code or several subheadings: trafilatura, the fallback, loses those (it dropped the
    headings and broke the code blocks of Apache's manual). News and blog pages keep trafilatura,
    which tells their related-story and subscription boxes from the story better."""
    body = root.find("body")
    if body is None:
        return None
    whole = _prose_length(body)
    if not whole:
        return None
    found = None
    for el in body.iter("div", "section"):
        parts = {part.lower() for part in _NAME_PARTS.split(f"{el.get('id') or ''} {el.get('class') or ''}") if part}
        if parts.isdisjoint(_CONTENT_NAMES) or not parts.isdisjoint(_ASIDE_NAMES):
            continue
        if (found is None or found in el.iterancestors()) and _prose_length(el) >= _CONTAINER_SHARE * whole:
            found = el
    if found is None or (found.find(".//pre") is None and _prose_sections(found) < _DOCUMENT_HEADINGS):
        return None
    return found


def _prose_sections(el: HtmlElement) -> int:
    """Subheadings followed by a paragraph of prose: a widget's heading is followed by links."""
    count = 0
    for heading in el.iter("h2", "h3", "h4"):
        following = heading.getnext()
        if following is not None and following.tag == "p" and _prose_length(following) >= _SECTION_PROSE:
            count += 1
    return count


def _prose_length(el: HtmlElement) -> int:
    """Characters of the element's text, outside links and scripts and not counting spaces."""
    skipped = sum(_visible_chars(inner) for inner in el.iter("a", "script", "style"))
    return max(0, _visible_chars(el) - skipped)


def _visible_chars(el: HtmlElement) -> int:
    return sum(len("".join(text.split())) for text in el.itertext())
