"""Sphinx: basic family (alabaster, pallets, classic, nature...), Read the
Docs theme, Furo and PyData (also sphinx-book-theme, which builds on it).

Debian's and many self-hosted builds carry no Sphinx generator meta (only
docutils'), so detection relies on the assets every Sphinx page loads
(``documentation_options.js``, ``doctools.js``) and on theme DOM markers.
"""
from __future__ import annotations

from harvester.extract.profiles.base import GeneratorProfile, PageView

# Chrome shared by all themes: permalink anchors, "[source]"-style back
# links from viewcode pages, the search box and the docs' local TOC.
_NOISE = ("a.headerlink", "a.viewcode-back", "div.searchbox", "div#searchbox", "div.sphinxsidebar",
          "div.related", "div.footer", "div.clearer")
_TOC = ("nav.contents.local", "div.contents.local", "div.toctree-wrapper.hidden")
_ADMONITIONS = ("div.admonition", "aside.admonition", "div.seealso", "div.versionadded", "div.versionchanged",
                "div.deprecated", "div.versionremoved", "div.note", "div.warning", "div.topic.note")
_ADMONITION_TITLES = ("p.admonition-title", "p.topic-title", "span.versionmodified")
# Object descriptions of every domain (py, c, cpp, js, rst, std...) and the
# pre-Sphinx-4 classes without a domain prefix. Field lists ("Parameters:")
# are <dl class="field-list">, not matched.
_SIGNATURES = ("dt.sig-object", "dl.py > dt", "dl.c > dt", "dl.cpp > dt", "dl.js > dt", "dl.rst > dt",
               "dl.std > dt", "dl.describe > dt", "dl.function > dt", "dl.class > dt", "dl.method > dt",
               "dl.attribute > dt", "dl.exception > dt", "dl.data > dt", "dl.classmethod > dt",
               "dl.staticmethod > dt", "dl.property > dt", "dl.decorator > dt", "dl.object > dt")


def is_sphinx(v: PageView) -> bool:
    if v.generated_by("sphinx"):
        return True
    if "documentation_options" in v.assets or "doctools.js" in v.assets or "sphinx_highlight" in v.assets:
        return True
    # Every Sphinx HTML build links its highlighting styles there, also when a theme loads its
    # scripts at the end of <body> (SQLAlchemy's).
    if "_static/pygments.css" in v.assets:
        return True
    return v.has_class("sphinxsidebar", "wy-breadcrumbs", "wy-nav-content", "rst-content",
                       "sphinxsidebarwrapper", "bd-article-container")


def _is_furo(v: PageView) -> bool:
    return "furo" in v.generator or ("styles/furo" in v.assets and is_sphinx(v))


def _is_pydata(v: PageView) -> bool:
    return ("pydata-sphinx-theme" in v.generator or "pydata-sphinx-theme" in v.assets
            or ("bd-" in v.assets and is_sphinx(v) and v.has_class("bd-article")))


def _is_rtd(v: PageView) -> bool:
    if "wy-body-for-nav" in v.top_classes:
        return True
    return is_sphinx(v) and ("css/theme.css" in v.assets or v.has_class("wy-breadcrumbs", "rst-content"))


FURO = GeneratorProfile(
    name="sphinx-furo",
    detect=_is_furo,
    writes_pages_whole=True,
    generators=("sphinx",),
    main=("article[role=main]", "article#furo-main-content", "div.content > article"),
    noise=_NOISE + ("div.content-icon-container", "div.edit-this-page", "div.view-this-page",
                    "div.theme-toggle-container", "label.toc-overlay-icon", "div.article-container > footer"),
    pager=("div.related-pages", "div.bottom-of-page"),
    toc=_TOC + ("aside.toc-drawer", "div.toc-drawer"),
    admonitions=_ADMONITIONS,
    admonition_titles=_ADMONITION_TITLES,
    signatures=_SIGNATURES,
)

PYDATA = GeneratorProfile(
    name="sphinx-pydata",
    detect=_is_pydata,
    writes_pages_whole=True,
    generators=("sphinx",),
    main=("article.bd-article", "main#main-content", "div.bd-content"),
    noise=_NOISE + ("div.header-article-items", "div.bd-header-article", "footer.bd-footer-content",
                    "div.bd-footer-article", "div.tocsection.editthispage", "div.tocsection.sourcelink"),
    breadcrumbs=("ul.bd-breadcrumbs", "nav[aria-label=Breadcrumb]"),
    pager=("div.prev-next-area", "footer.prev-next-footer", "div.prev-next-footer"),
    version_switcher=("div.version-switcher__container", "div.navbar-item.version-switcher"),
    toc=_TOC + ("div.bd-sidebar-secondary", "div.bd-toc", "nav.page-toc"),
    admonitions=_ADMONITIONS + ("div.dropdown.admonition",),
    admonition_titles=_ADMONITION_TITLES,
    signatures=_SIGNATURES,
)

RTD = GeneratorProfile(
    name="sphinx-rtd",
    detect=_is_rtd,
    writes_pages_whole=True,
    generators=("sphinx",),
    main=("div[itemprop=articleBody]", "div.rst-content div[role=main]", "div.rst-content"),
    noise=_NOISE + ("div.wy-breadcrumbs-aside", "div.rst-footer-buttons", "div.wy-side-scroll"),
    breadcrumbs=("ul.wy-breadcrumbs", "div[role=navigation][aria-label=breadcrumbs]",
                 "nav.wy-breadcrumbs"),
    pager=("div.rst-footer-buttons",),
    version_switcher=("div.rst-versions", "div.wy-side-nav-search div.version", "div.switch-menus",
                      "div.version-switch"),
    toc=_TOC,
    admonitions=_ADMONITIONS,
    admonition_titles=_ADMONITION_TITLES,
    signatures=_SIGNATURES,
)

BASIC = GeneratorProfile(
    name="sphinx",
    detect=is_sphinx,
    writes_pages_whole=True,
    generators=("sphinx",),
    # basic layout: div.body[role=main] inside documentwrapper/bodywrapper;
    # some themes drop the role, very old ones only have div.document. Django's own theme lays its
    # page out on a YUI grid inside div.document, the header, its navigation and the footer with it.
    main=("div.body[role=main]", "div.bodywrapper div.body", "div.documentwrapper div.body",
          "div[role=main]", "div#yui-main div.yui-g", "div.document"),
    noise=_NOISE,
    breadcrumbs=("div.related[role=navigation] > ul", "div.related > ul"),
    pager=("div.related", "p.topless", "nav#rellinks", "div.sphinxsidebar div.relations"),
    version_switcher=("div.rst-versions", "div.version-switch", "select#version-select"),
    toc=_TOC,
    admonitions=_ADMONITIONS,
    admonition_titles=_ADMONITION_TITLES,
    signatures=_SIGNATURES,
)

PROFILES = (FURO, PYDATA, RTD, BASIC)
