"""mdBook: signs ``<!-- Book generated using mdBook -->`` in ``<head>``.

The chapter is ``#content > main``; prev/next arrows are ``nav.nav-wrapper``
(inside #content) and ``nav.nav-wide-wrapper``. Heading text is wrapped in
``a.header`` self-links, which are content, not chrome.
"""
from __future__ import annotations

from harvester.extract.profiles.base import GeneratorProfile, PageView


def _detect(v: PageView) -> bool:
    return ("mdbook" in v.comments or v.generated_by("mdbook") or "book.js" in v.assets
            or (v.has_id("mdbook-help-container", "menu-bar") and v.has_class("sidebar-scrollbox")))


PROFILE = GeneratorProfile(
    name="mdbook",
    detect=_detect,
    writes_pages_whole=True,
    generators=("mdbook",),
    main=("#content > main", "div.content > main", "main"),
    noise=("div.buttons", "button.clip-button", "div#menu-bar"),
    pager=("nav.nav-wrapper", "nav.nav-wide-wrapper", "a.nav-chapters"),
    toc=("nav#sidebar", "div.sidebar-scrollbox"),
    admonitions=("div.admonition", "blockquote.blockquote-tag"),
    admonition_titles=("div.admonition-title", "p.blockquote-tag-title"),
)
