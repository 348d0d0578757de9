"""Hugo documentation themes: Docsy (``td-`` classes) and, as a plain
"hugo" profile, hugo-book, Geekdoc and Learn/Relearn.

Hugo writes ``<meta name="generator" content="Hugo 0.125.4">`` through
``hugo.Generator``, which these themes include; the plain profile also needs one of its themes'
markers, since most Hugo blog themes write the same meta.
"""
from __future__ import annotations

from harvester.extract.profiles.base import GeneratorProfile, PageView


def _is_docsy(v: PageView) -> bool:
    return bool({"td-page", "td-section", "td-home", "td-documentation"} & v.top_classes) \
        or v.has_class("td-content", "td-main")


def _is_hugo(v: PageView) -> bool:
    # Most Hugo sites are blogs (Ananke, Coder): they take the generic path, whose listings and
    # articles are a blog's; only the documentation themes' pages are pages of a manual.
    if v.has_class("book-menu") and v.has_class("book-page"):
        return True  # hugo-book, which writes no generator meta
    return v.generated_by("hugo") and (
        v.has_class("book-article", "book-page", "book-menu", "gdoc-markdown", "gdoc-page")
        or v.has_id("body-inner", "R-body-inner"))


DOCSY = GeneratorProfile(
    name="hugo-docsy",
    detect=_is_docsy,
    writes_pages_whole=True,
    generators=("hugo",),
    main=("div.td-content", "main[role=main]"),
    noise=("a.td-heading-self-link", "div.td-page-meta", "div.td-page-meta__lastmod", "div.td-page-meta--lastmod",
           "div.d-print-none", "div.td-byline", "div.td-feedback", "div.feedback--title"),
    breadcrumbs=("nav.td-breadcrumbs", "nav[aria-label=breadcrumb]", "ol.breadcrumb"),
    pager=("ul.td-pager", "nav.td-pager", "div.td-pager"),
    version_switcher=("div.td-navbar__version", "li.nav-item.dropdown", "div.td-sidebar-version"),
    toc=("aside.td-sidebar-toc", "nav#TableOfContents", "div.td-toc"),
    admonitions=("div.alert", "div.pageinfo"),
    admonition_titles=("h4.alert-heading", "div.alert-heading"),
)

HUGO = GeneratorProfile(
    name="hugo",
    detect=_is_hugo,
    writes_pages_whole=True,
    generators=("hugo",),
    main=("article.book-article", "article.markdown", "article.gdoc-markdown", "div#body-inner",
          "main article", "main"),
    noise=("a.anchor", "a.gdoc-markdown__link--raw", "div.book-footer", "div.gdoc-page__footer"),
    breadcrumbs=("nav[aria-label=breadcrumb]", "ol.breadcrumb", "div#breadcrumbs", "nav.breadcrumbs"),
    pager=("nav.pagination", "div.gdoc-page__nav", "div#navigation"),
    version_switcher=("div.version-switcher", "li.dropdown.versions"),
    toc=("aside.book-toc", "nav#TableOfContents", "div.gdoc-toc"),
    admonitions=("div.alert", "blockquote.book-hint", "div.book-hint", "div.gdoc-hint", "div.notices",
                 "div.box.notices"),
    admonition_titles=("h4.alert-heading", "div.gdoc-hint__title", "div.box-label"),
)

PROFILES = (DOCSY, HUGO)
