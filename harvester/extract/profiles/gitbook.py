"""GitBook: legacy GitBook 3 / HonKit static builds (``<meta name="generator"
content="GitBook 3.2.3">``, article in ``section.markdown-section``) and
hosted GitBook (generator "GitBook", article in ``main``).

Hints (``{% hint style="info" %}``) render as ``div.hint``/``.hints`` boxes
(hosted, and the gitbook-plugin-hints used by legacy books).
"""
from __future__ import annotations

from harvester.extract.profiles.base import GeneratorProfile, PageView


def _detect(v: PageView) -> bool:
    return v.generated_by("gitbook", "honkit") or v.has_class("book-summary", "markdown-section")


PROFILE = GeneratorProfile(
    name="gitbook",
    detect=_detect,
    # A prerendered client-side app: a route may be client-only, its HTML a shell.
    writes_pages_whole=False,
    generators=("gitbook", "honkit"),
    main=("section.markdown-section", "div.page-inner section", "main"),
    noise=("div.book-header", "a.btn.pull-left", "div.gitbook-link", "a.page-edit-link",
           "div.page-footer", "span.gitbook-link"),
    pager=("a.navigation", "div.navigation"),
    toc=("div.book-summary", "nav.page-toc", "aside[data-testid=table-of-contents]"),
    breadcrumbs=("nav[aria-label=Breadcrumb]", "ol.breadcrumbs"),
    admonitions=("div.hints", "div.hint", "div[data-hint-style]", "div.alert"),
    admonition_titles=("div.hints-title", "p.hint-title", "strong.alert-title"),
)
