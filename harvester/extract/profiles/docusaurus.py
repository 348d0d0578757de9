"""Docusaurus (v2/v3): ``<meta name="generator" content="Docusaurus v3.5.2">``.

The article is ``div.theme-doc-markdown`` inside an ``<article>`` that also
holds the breadcrumbs, version badge, mobile TOC and footer (edit link, last
updated); the pager is a sibling ``nav.pagination-nav``.
"""
from __future__ import annotations

from harvester.extract.profiles.base import GeneratorProfile, PageView


def _detect(v: PageView) -> bool:
    return v.generated_by("docusaurus") or v.has_id("__docusaurus") or v.has_class("theme-doc-markdown")


PROFILE = GeneratorProfile(
    name="docusaurus",
    detect=_detect,
    # A prerendered client-side app: a route may be client-only, its HTML a shell.
    writes_pages_whole=False,
    generators=("docusaurus",),
    main=("div.theme-doc-markdown", "article div.markdown", "main article"),
    noise=("a.hash-link", "div.theme-doc-footer", "footer.theme-doc-footer", "a.theme-edit-this-page",
           "span.theme-last-updated", "div.theme-last-updated", "button.clean-btn", "div.buttonGroup__atx"),
    breadcrumbs=("nav.theme-doc-breadcrumbs", "ul.breadcrumbs"),
    pager=("nav.pagination-nav", "nav.theme-doc-footer-edit-meta-row"),
    version_switcher=("span.theme-doc-version-badge", "div.theme-doc-version-banner",
                      "div.navbar__item.dropdown"),
    toc=("div.theme-doc-toc-mobile", "div.theme-doc-toc-desktop", "div.tableOfContents"),
    admonitions=("div.theme-admonition", "div.admonition", "div.alert"),
    admonition_titles=("div[class*=admonitionHeading]", "div.admonition-heading"),
)
