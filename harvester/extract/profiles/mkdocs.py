"""MkDocs: Material for MkDocs, and the built-in mkdocs / readthedocs themes.

MkDocs writes ``<meta name="generator" content="mkdocs-1.6.0, mkdocs-material-9.5.2">``
(Material adds its own part); the DOM markers cover builds that strip it.
"""
from __future__ import annotations

from harvester.extract.profiles.base import GeneratorProfile, PageView

_ADMONITION_TITLES = ("p.admonition-title", "summary")


def _is_material(v: PageView) -> bool:
    return ("mkdocs-material" in v.generator or "assets/stylesheets/main" in v.assets
            or v.has_class("md-content", "md-container"))


def _is_mkdocs(v: PageView) -> bool:
    # The built-in mkdocs theme writes no generator meta; its search dialog is always there.
    return v.generated_by("mkdocs") or v.has_id("mkdocs_search_modal")


MATERIAL = GeneratorProfile(
    name="mkdocs-material",
    detect=_is_material,
    writes_pages_whole=True,
    generators=("mkdocs",),
    main=("article.md-content__inner", "div.md-content article", "div.md-content"),
    noise=("a.headerlink", "a.md-content__button", "button.md-clipboard", "aside.md-source-file",
           "div.md-source-file", "nav.md-tags", "form.md-feedback", "div.md-feedback", "a.md-top",
           "div.md-dialog"),
    breadcrumbs=("nav.md-path", "ol.md-path__list"),
    pager=("nav.md-footer__inner", "footer.md-footer", "div.md-footer-nav"),
    version_switcher=("div.md-version", "div.md-header__option"),
    toc=("div.md-sidebar--secondary", "nav.md-nav--secondary"),
    admonitions=("div.admonition", "details"),
    admonition_titles=_ADMONITION_TITLES,
    signatures=("div.doc-signature", "h2.doc-heading code", "dl.py > dt"),
)

PLAIN = GeneratorProfile(
    name="mkdocs",
    detect=_is_mkdocs,
    writes_pages_whole=True,
    generators=("mkdocs",),
    # mkdocs theme: div.col-md-9[role=main]; readthedocs theme: div[role=main]
    # inside .rst-content.
    main=("div.col-md-9[role=main]", "div.rst-content div[role=main]", "div[role=main]", "main"),
    noise=("a.headerlink", "div.rst-footer-buttons", "div.wy-breadcrumbs-aside", "a.edit-on-github"),
    breadcrumbs=("ul.wy-breadcrumbs", "nav[aria-label=breadcrumbs]", "ol.breadcrumb"),
    pager=("div.rst-footer-buttons", "ul.pager", "nav.pager"),
    version_switcher=("div.rst-versions", "div.version-select"),
    toc=("div.col-md-3", "div.bs-sidebar"),
    admonitions=("div.admonition", "details"),
    admonition_titles=_ADMONITION_TITLES,
)

PROFILES = (MATERIAL, PLAIN)
