"""Tests for generator profiles (harvester.extract.profiles) as applied by
extract_page: detection, main element, chrome removal, breadcrumbs,
admonitions and API signatures.

Each framework gets a small page shaped like what the generator really
emits (meta generator tag or its DOM markers, wrappers, widgets). Real
Sphinx pages from Debian's python-{flask,requests,scrapy}-doc packages cover
the pallets, alabaster and Read the Docs themes (skipped when missing).
"""
from __future__ import annotations

import gzip
import os
import re

import lxml.html
import pytest

from harvester.extract.converters import available_converters, get_converter
from harvester.extract.page import ExtractedPage, extract_page
from harvester.extract.profiles import REGISTRY, GeneratorProfile, detect_profile
from tests.conftest import import_prerequisite, missing_prerequisite

PROSE = ("The quick configuration guide explains every option of the server, how the defaults are "
         "chosen, and which settings you should change before running it in production.")


def _html(body: str, *, generator: str | None = None, head: str = "", title: str = "Page") -> str:
    meta = f'<meta name="generator" content="{generator}">' if generator else ""
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>{meta}<title>{title}</title>{head}"
            f"</head><body>{body}</body></html>")


def _extract(html: str, url: str = "https://docs.example.org/guide/config/") -> ExtractedPage:
    return extract_page(html, url)


def _assert_no_chrome(md: str, *chrome: str) -> None:
    for text in chrome:
        assert text not in md, f"chrome leaked: {text!r}\n{md}"


def _detect(html: str) -> str | None:
    profile = detect_profile(lxml.html.document_fromstring(html))
    return profile.name if profile else None


# --------------------------------------------------------------------------
# Sphinx themes
# --------------------------------------------------------------------------

SPHINX_HEAD = ('<script data-url_root="./" id="documentation_options" src="_static/documentation_options.js">'
               '</script><script src="_static/doctools.js"></script>')
SPHINX_API = (
    '<dl class="py class"><dt class="sig sig-object py" id="pkg.Server">'
    '<em class="property"><span class="pre">class</span><span class="w"> </span></em>'
    '<span class="sig-prename descclassname"><span class="pre">pkg.</span></span>'
    '<span class="sig-name descname"><span class="pre">Server</span></span><span class="sig-paren">(</span>'
    '<em class="sig-param"><span class="n"><span class="pre">host_name</span></span></em>, '
    '<em class="sig-param"><span class="n"><span class="pre">port</span></span><span class="o">'
    '<span class="pre">=</span></span><span class="default_value"><span class="pre">8080</span></span></em>'
    '<span class="sig-paren">)</span><a class="reference internal" href="_modules/pkg.html#Server">'
    '<span class="viewcode-link"><span class="pre">[source]</span></span></a>'
    '<a class="headerlink" href="#pkg.Server" title="Permalink to this definition">¶</a></dt>'
    '<dd><p>Serve the application on <em>host_name</em>.</p>'
    '<div class="versionadded"><p><span class="versionmodified added">New in version 1.2: </span>'
    'The <code class="docutils literal notranslate"><span class="pre">port</span></code> argument.</p></div>'
    '<dl class="field-list simple"><dt class="field-odd">Parameters<span class="colon">:</span></dt>'
    '<dd class="field-odd"><p><strong>host_name</strong> (<em>str</em>) – the interface to bind.</p></dd></dl>'
    '</dd></dl>')
SPHINX_NOTE = (
    '<div class="admonition note"><p class="admonition-title">Note</p><p>Restart the server after '
    'changing <code class="docutils literal notranslate"><span class="pre">port</span></code>.</p>'
    '<div class="highlight-python notranslate"><div class="highlight"><pre><span></span>'
    '<span class="n">server</span><span class="o">.</span><span class="n">restart</span>()\n</pre></div></div>'
    '</div>')
SPHINX_ARTICLE = (
    '<section id="configuration"><h1>Configuration<a class="headerlink" href="#configuration">¶</a></h1>'
    f'<p>{PROSE}</p>{SPHINX_NOTE}{SPHINX_API}</section>')


def _assert_sphinx_article(page: ExtractedPage) -> None:
    md = page.markdown
    assert md.startswith("# Configuration\n")
    assert PROSE in md
    assert "> **Note:** Restart the server after changing `port`." in md
    assert "> ```python\n> server.restart()\n> ```" in md
    assert "`class pkg.Server(host_name, port=8080)`" in md
    assert "*class*" not in md and "host\\_name, " not in md
    assert "> **New in version 1.2:** The `port` argument." in md
    assert "Parameters:" in md  # field lists stay (they are not signatures)
    assert "¶" not in md


def test_sphinx_basic_alabaster_layout() -> None:
    html = _html(
        '<div class="related" role="navigation" aria-label="related navigation"><h3>Navigation</h3><ul>'
        '<li class="right"><a href="genindex.html">index</a></li>'
        '<li class="right"><a href="next.html" accesskey="N">next</a> |</li>'
        '<li class="nav-item nav-item-0"><a href="index.html">MyLib 2.0 documentation</a> »</li>'
        '<li class="nav-item nav-item-1"><a href="guide.html">User Guide</a> »</li>'
        '<li class="nav-item nav-item-this"><a href="">Configuration</a></li></ul></div>'
        '<div class="document"><div class="documentwrapper"><div class="bodywrapper">'
        f'<div class="body" role="main">{SPHINX_ARTICLE}</div></div></div>'
        '<div class="sphinxsidebar" role="navigation" aria-label="main navigation"><div class="sphinxsidebarwrapper">'
        '<h3>Quick search</h3><div class="searchformwrapper"><form class="search"><input type="text"></form></div>'
        '<h3>Related Topics</h3><ul><li>Previous: <a href="prev.html">Installation guide page</a></li></ul>'
        '</div></div></div><div class="footer">©2024, Example Authors. Powered by Sphinx &amp; Alabaster</div>',
        head=SPHINX_HEAD + '<link rel="stylesheet" href="_static/alabaster.css">',
        title="Configuration — MyLib 2.0 documentation")
    page = _extract(html)
    assert page.generator == "sphinx"
    _assert_sphinx_article(page)
    _assert_no_chrome(page.markdown, "Quick search", "Related Topics", "Installation guide page", "Powered by",
                      "index", "next")
    assert page.breadcrumbs == ["MyLib 2.0 documentation", "User Guide", "Configuration"]
    assert page.title == "Configuration"


def test_sphinx_read_the_docs_theme() -> None:
    html = _html(
        '<div class="wy-grid-for-nav"><nav class="wy-nav-side"><div class="wy-side-scroll">'
        '<div class="wy-side-nav-search"><a href="index.html">MyLib</a><div class="version">2.0</div></div>'
        '<div class="wy-menu wy-menu-vertical"><ul><li><a href="install.html">Installation steps</a></li></ul></div>'
        '</div></nav><section class="wy-nav-content-wrap"><div class="wy-nav-content"><div class="rst-content">'
        '<div role="navigation" aria-label="Page navigation"><ul class="wy-breadcrumbs">'
        '<li><a href="index.html" class="icon icon-home" aria-label="Home"></a></li>'
        '<li class="breadcrumb-item"><a href="guide.html">User Guide</a></li>'
        '<li class="breadcrumb-item active">Configuration</li>'
        '<li class="wy-breadcrumbs-aside"><a href="_sources/config.rst.txt">View page source</a></li></ul><hr/></div>'
        f'<div role="main" class="document" itemscope="itemscope"><div itemprop="articleBody">{SPHINX_ARTICLE}</div></div>'
        '<footer><div class="rst-footer-buttons" role="navigation" aria-label="Footer">'
        '<a href="install.html" class="btn btn-neutral float-left" rel="prev">Previous</a>'
        '<a href="deploy.html" class="btn btn-neutral float-right" rel="next">Next</a></div><hr/>'
        '<div role="contentinfo"><p>© Copyright 2024, Example Authors.</p></div></footer>'
        '</div></div></section></div>'
        '<div class="rst-versions" data-toggle="rst-versions" role="note"><span class="rst-current-version">'
        'Read the Docs v: latest</span><div class="rst-other-versions"><dl><dt>Versions</dt><dd>stable</dd></dl>'
        '</div></div>',
        head=SPHINX_HEAD + '<link rel="stylesheet" href="_static/css/theme.css">')
    page = _extract(html)
    assert page.generator == "sphinx-rtd"
    _assert_sphinx_article(page)
    _assert_no_chrome(page.markdown, "Installation steps", "View page source", "Previous", "Next", "Copyright",
                      "Read the Docs v", "Versions")
    assert page.breadcrumbs == ["Home", "User Guide", "Configuration"]


def test_sphinx_furo_theme() -> None:
    html = _html(
        '<div class="page"><aside class="sidebar-drawer"><div class="sidebar-container"><div class="sidebar-sticky">'
        '<a class="sidebar-brand" href="index.html">MyLib docs</a><div class="sidebar-tree"><ul>'
        '<li><a href="install.html">Installation steps</a></li></ul></div></div></div></aside>'
        '<div class="main"><div class="content"><div class="article-container">'
        '<div class="content-icon-container"><div class="edit-this-page"><a class="muted-link" '
        'href="https://github.com/x/edit/main/config.rst" title="Edit this page">Edit this page</a></div>'
        '<div class="theme-toggle-container"><button class="theme-toggle">Toggle theme</button></div></div>'
        f'<article role="main" id="furo-main-content">{SPHINX_ARTICLE}</article></div>'
        '<footer><div class="related-pages"><a class="next-page" href="deploy.html"><div class="page-info">'
        '<div class="context">Next</div><div class="title">Deploying to production</div></div></a></div>'
        '<div class="bottom-of-page"><div class="left-details">Copyright © 2024, Example Authors</div></div>'
        '</footer></div><aside class="toc-drawer"><div class="toc-sticky"><div class="toc-title-container">'
        '<span class="toc-title">On this page</span></div><div class="toc-tree"><ul><li>'
        '<a href="#configuration">Configuration overview link</a></li></ul></div></div></aside></div></div>',
        generator="sphinx-7.2.6, furo 2024.01.29",
        head=SPHINX_HEAD + '<link rel="stylesheet" href="_static/styles/furo.css">')
    page = _extract(html)
    assert page.generator == "sphinx-furo"
    _assert_sphinx_article(page)
    _assert_no_chrome(page.markdown, "Installation steps", "Edit this page", "Toggle theme", "Deploying to production",
                      "On this page", "Configuration overview link", "Copyright")


def test_sphinx_pydata_theme() -> None:
    html = _html(
        '<div class="bd-header-announcement"></div><header class="bd-header navbar"><div class="navbar-item">'
        '<div class="version-switcher__container dropdown"><button class="version-switcher__button">v2.0 (stable)'
        '</button></div></div></header><div class="bd-container"><div class="bd-container__inner bd-page-width">'
        '<div class="bd-sidebar-primary bd-sidebar"><nav><ul><li><a href="install.html">Installation steps</a></li>'
        '</ul></nav></div><main id="main-content" class="bd-main"><div class="bd-content"><div class="bd-article-container">'
        '<div class="bd-header-article"><div class="header-article-items"><nav aria-label="Breadcrumb">'
        '<ul class="bd-breadcrumbs"><li class="breadcrumb-item breadcrumb-home"><a href="index.html" '
        'class="nav-link" aria-label="Home"><i class="fa-solid fa-home"></i></a></li>'
        '<li class="breadcrumb-item"><a href="guide.html" class="nav-link">User Guide</a></li>'
        '<li class="breadcrumb-item active" aria-current="page">Configuration</li></ul></nav></div></div>'
        f'<article class="bd-article" role="main">{SPHINX_ARTICLE}</article>'
        '<footer class="prev-next-footer"><div class="prev-next-area"><a class="left-prev" href="install.html">'
        '<p class="prev-next-subtitle">previous</p><p class="prev-next-title">Installation steps</p></a></div>'
        '</footer></div><div class="bd-sidebar-secondary bd-toc"><div class="sidebar-secondary-items">'
        '<div class="page-toc tocsection onthispage">On this page</div></div></div></div></main></div></div>',
        head=SPHINX_HEAD + '<link href="_static/styles/pydata-sphinx-theme.css?digest=1" rel="stylesheet">')
    page = _extract(html)
    assert page.generator == "sphinx-pydata"
    _assert_sphinx_article(page)
    _assert_no_chrome(page.markdown, "Installation steps", "v2.0 (stable)", "previous", "On this page")
    assert page.breadcrumbs == ["Home", "User Guide", "Configuration"]


# --------------------------------------------------------------------------
# MkDocs
# --------------------------------------------------------------------------

def test_mkdocs_material() -> None:
    html = _html(
        '<header class="md-header"><nav class="md-header__inner"><div class="md-header__option">'
        '<div class="md-version"><button class="md-version__current">2.0</button></div></div></nav></header>'
        '<div class="md-container"><main class="md-main"><div class="md-main__inner md-grid">'
        '<div class="md-sidebar md-sidebar--primary"><nav class="md-nav md-nav--primary"><ul>'
        '<li><a href="../install/">Installation steps</a></li></ul></nav></div>'
        '<div class="md-sidebar md-sidebar--secondary"><nav class="md-nav md-nav--secondary">'
        '<label class="md-nav__title">Table of contents</label></nav></div>'
        '<div class="md-content" data-md-component="content"><nav class="md-path" aria-label="Navigation">'
        '<ol class="md-path__list"><li class="md-path__item"><a href="../" class="md-path__link">'
        '<span class="md-ellipsis">Home</span></a></li><li class="md-path__item"><a href="../guide/" '
        'class="md-path__link"><span class="md-ellipsis">User Guide</span></a></li></ol></nav>'
        '<article class="md-content__inner md-typeset">'
        '<a href="https://github.com/x/edit/main/docs/config.md" title="Edit this page" '
        'class="md-content__button md-icon">Edit this page</a>'
        '<h1 id="configuration">Configuration<a class="headerlink" href="#configuration" title="Permanent link">¶</a></h1>'
        f'<p>{PROSE}</p>'
        '<div class="admonition warning"><p class="admonition-title">Warning</p><p>Never expose the admin '
        'port publicly.</p></div>'
        '<details class="tip"><summary>Faster reloads</summary><p>Set <code>reload: true</code> while developing.</p>'
        '</details>'
        '<div class="language-yaml highlight"><pre><span></span><code><span class="nt">port</span>: 8080\n'
        '</code></pre></div>'
        '<aside class="md-source-file"><span class="md-source-file__fact">Last update: 2024-05-01</span></aside>'
        '</article></div></div></main>'
        '<footer class="md-footer"><nav class="md-footer__inner md-grid" aria-label="Footer">'
        '<a href="../install/" class="md-footer__link md-footer__link--prev"><div class="md-footer__title">'
        '<span class="md-footer__direction">Previous</span><div class="md-ellipsis">Installation steps</div></div></a>'
        '</nav></footer></div>',
        generator="mkdocs-1.6.0, mkdocs-material-9.5.18")
    page = _extract(html)
    md = page.markdown
    assert page.generator == "mkdocs-material"
    assert md.startswith("# Configuration\n")
    assert PROSE in md
    assert "> **Warning:** Never expose the admin port publicly." in md
    assert "> **Faster reloads:** Set `reload: true` while developing." in md
    assert "```yaml\nport: 8080\n```" in md
    _assert_no_chrome(md, "Edit this page", "Installation steps", "Table of contents", "Last update", "2.0",
                      "Previous", "¶")
    assert page.breadcrumbs == ["Home", "User Guide"]


def test_mkdocs_builtin_theme() -> None:
    html = _html(
        '<div class="navbar fixed-top"><div class="container"><a class="navbar-brand" href="..">MyLib</a>'
        '<ul class="nav navbar-nav ml-auto"><li class="nav-item"><a rel="prev" href="../install/" class="nav-link">'
        'Previous</a></li><li class="nav-item"><a href="https://github.com/x/edit/master/docs/config.md" '
        'class="nav-link">Edit on GitHub</a></li></ul></div></div>'
        '<div class="container"><div class="row"><div class="col-md-3"><div class="navbar-expand-md bs-sidebar">'
        '<ul class="nav flex-column"><li class="nav-item"><a href="#configuration">Configuration in this page</a>'
        '</li></ul></div></div><div class="col-md-9" role="main">'
        f'<h1 id="configuration">Configuration</h1><p>{PROSE}</p>'
        '<div class="admonition note"><p class="admonition-title">Note</p><p>Ports below 1024 need root.</p></div>'
        '</div></div></div><footer class="col-md-12"><p>Documentation built with <a href="https://www.mkdocs.org/">'
        'MkDocs</a>.</p></footer>',
        generator="mkdocs-1.6.0")
    page = _extract(html)
    assert page.generator == "mkdocs"
    assert page.markdown.startswith("# Configuration\n")
    assert "> **Note:** Ports below 1024 need root." in page.markdown
    _assert_no_chrome(page.markdown, "Previous", "Edit on GitHub", "Configuration in this page", "built with")


# --------------------------------------------------------------------------
# JavaScript generators
# --------------------------------------------------------------------------

def test_docusaurus_v3() -> None:
    html = _html(
        '<div id="__docusaurus"><nav class="navbar navbar--fixed-top"><div class="navbar__inner">'
        '<a class="navbar__brand" href="/">MyLib</a><div class="navbar__item dropdown dropdown--hoverable">'
        '<a class="navbar__link" href="#">2.0.x</a><ul class="dropdown__menu"><li><a class="dropdown__link" '
        'href="/docs/next/config">Next unreleased</a></li></ul></div></div></nav>'
        '<div class="main-wrapper"><div class="docsWrapper_hBAB"><aside class="theme-doc-sidebar-container">'
        '<nav class="menu"><ul class="theme-doc-sidebar-menu menu__list"><li><a class="menu__link" '
        'href="/docs/install">Installation steps</a></li></ul></nav></aside><main class="docMainContainer_TBSr">'
        '<div class="container padding-top--md padding-bottom--lg"><div class="row"><div class="col docItemCol_VOVn">'
        '<div class="docItemContainer_Djhp"><article>'
        '<nav class="theme-doc-breadcrumbs breadcrumbsContainer_Z_bl" aria-label="Breadcrumbs">'
        '<ul class="breadcrumbs"><li class="breadcrumbs__item"><a aria-label="Home page" class="breadcrumbs__link" '
        'href="/"><svg viewBox="0 0 24 24"></svg></a></li><li class="breadcrumbs__item"><span class="breadcrumbs__link">'
        'Guides</span></li><li class="breadcrumbs__item breadcrumbs__item--active"><span class="breadcrumbs__link">'
        'Configuration</span></li></ul></nav>'
        '<span class="theme-doc-version-badge badge badge--secondary">Version: 2.0.x</span>'
        '<div class="tocCollapsible_ETCw theme-doc-toc-mobile tocMobile_ITEo"><button type="button" '
        'class="clean-btn tocCollapsibleButton_TO0P">On this page</button></div>'
        '<div class="theme-doc-markdown markdown"><header><h1>Configuration</h1></header>'
        f'<p>{PROSE}</p>'
        '<div class="theme-admonition theme-admonition-tip admonition_xJq3 alert alert--success">'
        '<div class="admonitionHeading_Gvgb"><span class="admonitionIcon_Rf37"><svg viewBox="0 0 12 16"></svg>'
        '</span>tip</div><div class="admonitionContent_BuS1"><p>Use environment variables for secrets.</p></div></div>'
        '<h2 class="anchor anchorWithStickyNavbar_LWe7" id="ports">Ports<a href="#ports" class="hash-link" '
        'aria-label="Direct link to Ports" title="Direct link to Ports">\u200b</a></h2>'
        '<div class="language-bash codeBlockContainer_Ckt0 theme-code-block"><div class="codeBlockContent_biex">'
        '<pre tabindex="0" class="prism-code language-bash codeBlock_bY9V"><code class="codeBlockLines_e6Vv">'
        '<span class="token-line"><span class="token plain">myserver --port 8080</span></span></code></pre>'
        '<div class="buttonGroup__atx"><button type="button" aria-label="Copy code to clipboard" '
        'class="clean-btn">Copy</button></div></div></div></div>'
        '<footer class="theme-doc-footer docusaurus-mt-lg"><div class="theme-doc-footer-edit-meta-row row">'
        '<div class="col"><a href="https://github.com/x/edit/main/docs/config.md" class="theme-edit-this-page">'
        'Edit this page</a></div><div class="col lastUpdated_JAkA"><span class="theme-last-updated">Last updated '
        'on May 1, 2024</span></div></div></footer></article>'
        '<nav class="pagination-nav docusaurus-mt-lg" aria-label="Docs pages"><a class="pagination-nav__link '
        'pagination-nav__link--prev" href="/docs/install"><div class="pagination-nav__sublabel">Previous</div>'
        '<div class="pagination-nav__label">Installation steps</div></a></nav></div></div>'
        '<div class="col col--3"><div class="tableOfContents_bqdL thin-scrollbar theme-doc-toc-desktop">'
        '<ul class="table-of-contents"><li><a href="#ports" class="table-of-contents__link">Ports section</a></li>'
        '</ul></div></div></div></div></main></div></div></div>',
        generator="Docusaurus v3.5.2")
    page = _extract(html, "https://docs.example.org/docs/config")
    md = page.markdown
    assert page.generator == "docusaurus"
    assert md.startswith("# Configuration\n")
    assert "## Ports\n" in md
    assert "> **Tip:** Use environment variables for secrets." in md
    assert "```bash\nmyserver --port 8080\n```" in md
    _assert_no_chrome(md, "Version: 2.0.x", "On this page", "Edit this page", "Last updated", "Installation steps",
                      "Ports section", "Copy", "Next unreleased", "Guides")
    assert page.breadcrumbs == ["Home page", "Guides", "Configuration"]


def test_vitepress() -> None:
    html = _html(
        '<div id="app"><div class="Layout"><header class="VPNav"><div class="VPNavBar"><a class="title" href="/">'
        'MyLib</a><div class="VPFlyout"><button class="button"><span class="text">v2.0</span></button></div></div>'
        '</header><aside class="VPSidebar"><nav class="nav"><a class="VPLink link" href="/install">Installation steps'
        '</a></nav></aside><div class="VPContent has-sidebar"><div class="VPDoc has-sidebar has-aside">'
        '<div class="container"><div class="aside"><div class="aside-container"><div class="aside-content">'
        '<div class="VPDocAside"><nav aria-labelledby="doc-outline-aria-label" class="VPDocAsideOutline">'
        '<div class="content"><div class="outline-title">On this page</div></div></nav></div></div></div></div>'
        '<div class="content"><div class="content-container"><main class="main"><div style="position:relative;" '
        'class="vp-doc _guide_config"><div><h1 id="configuration" tabindex="-1">Configuration '
        '<a class="header-anchor" href="#configuration" aria-label="Permalink to &quot;Configuration&quot;">\u200b</a></h1>'
        f'<p>{PROSE}</p>'
        '<div class="warning custom-block"><p class="custom-block-title">WARNING</p><p>Changing the port '
        'restarts all workers.</p></div>'
        '<div class="language-js vp-adaptive-theme"><button title="Copy Code" class="copy"></button>'
        '<span class="lang">js</span><pre class="shiki shiki-themes github-light github-dark vp-code">'
        '<code><span class="line"><span>export default { port: 8080 }</span></span></code></pre></div>'
        '</div></div></main><footer class="VPDocFooter"><div class="edit-info"><div class="edit-link">'
        '<a class="VPLink link vp-external-link-icon edit-link-button" href="https://github.com/x/edit/main/docs/config.md">'
        'Edit this page on GitHub</a></div><div class="last-updated"><p class="VPLastUpdated">Last updated: 5/1/24</p>'
        '</div></div><nav class="prev-next" aria-labelledby="doc-footer-aria-label"><div class="pager">'
        '<a class="VPLink link pager-link prev" href="/install"><span class="desc">Previous page</span>'
        '<span class="title">Installation steps</span></a></div></nav></footer></div></div></div></div></div></div></div>',
        generator="VitePress v1.3.4")
    page = _extract(html)
    md = page.markdown
    assert page.generator == "vitepress"
    assert md.startswith("# Configuration\n")
    assert "> **Warning:** Changing the port restarts all workers." in md
    assert "```js\nexport default { port: 8080 }\n```" in md
    _assert_no_chrome(md, "On this page", "Edit this page", "Last updated", "Previous page", "Installation steps",
                      "v2.0", "\n\njs\n")


def test_mdbook() -> None:
    html = (
        '<!DOCTYPE HTML><html lang="en" class="light sidebar-visible" dir="ltr"><head>'
        '<!-- Book generated using mdBook --><meta charset="UTF-8"><title>Configuration - MyLib Guide</title>'
        '</head><body class="sidebar-visible no-js"><div id="body-container">'
        '<nav id="sidebar" class="sidebar" aria-label="Table of contents"><div class="sidebar-scrollbox">'
        '<ol class="chapter"><li class="chapter-item expanded"><a href="install.html">1. Installation steps</a>'
        '</li></ol></div></nav><div id="page-wrapper" class="page-wrapper"><div class="page">'
        '<div id="menu-bar" class="menu-bar sticky"><div class="left-buttons"><button id="sidebar-toggle" '
        'class="icon-button">Toggle Table of Contents</button></div><h1 class="menu-title">MyLib Guide</h1>'
        '<div class="right-buttons"><a href="https://github.com/x/edit/main/src/config.md" title="Suggest an edit">'
        'Suggest an edit</a></div></div><div id="content" class="content"><main>'
        '<h1 id="configuration"><a class="header" href="#configuration">Configuration</a></h1>'
        f'<p>{PROSE}</p>'
        '<pre><code class="language-toml">[server]\nport = 8080\n</code></pre>'
        '<div class="admonition note"><div class="admonition-title"><p>Note</p></div><div><p>Values in the '
        'environment win over the file.</p></div></div>'
        '</main><nav class="nav-wrapper" aria-label="Page navigation"><a rel="prev" href="install.html" '
        'class="mobile-nav-chapters previous" title="Previous chapter">Previous chapter arrow</a></nav></div></div>'
        '<nav class="nav-wide-wrapper" aria-label="Page navigation"><a rel="prev" href="install.html" '
        'class="nav-chapters previous" title="Previous chapter">Wide previous arrow</a></nav></div></div>'
        '<script src="book.js"></script></body></html>')
    page = _extract(html)
    md = page.markdown
    assert page.generator == "mdbook"
    assert md.startswith("# Configuration\n")  # the a.header self-link is unwrapped
    assert "```toml\n[server]\nport = 8080\n```" in md
    assert "> **Note:** Values in the environment win over the file." in md
    _assert_no_chrome(md, "Installation steps", "Toggle Table", "Suggest an edit", "Previous chapter", "Wide previous",
                      "MyLib Guide")


def test_gitbook_legacy_with_hint() -> None:
    html = _html(
        '<div class="book"><div class="book-summary"><nav role="navigation"><ul class="summary">'
        '<li class="chapter"><a href="install.html">Installation steps</a></li></ul></nav></div>'
        '<div class="book-body"><div class="body-inner"><div class="book-header" role="navigation">'
        '<h1><a href="..">MyLib Guide</a></h1></div><div class="page-wrapper" tabindex="-1" role="main">'
        '<div class="page-inner"><div id="book-search-results"><div class="search-noresults">'
        '<section class="normal markdown-section"><h1 id="configuration">Configuration</h1>'
        f'<p>{PROSE}</p>'
        '<div class="alert alert-warning hints-alert"><div class="hints-icon"><i class="fa fa-exclamation"></i></div>'
        '<div class="hints-container"><p>Back up the file before editing it.</p></div></div>'
        '</section></div></div></div></div></div>'
        '<a href="install.html" class="navigation navigation-prev" aria-label="Previous page: Installation">'
        '<i class="fa fa-angle-left">Previous page arrow</i></a></div></div>',
        generator="GitBook 3.2.3")
    page = _extract(html)
    md = page.markdown
    assert page.generator == "gitbook"
    assert md.startswith("# Configuration\n")
    assert "> **Warning:** Back up the file before editing it." in md
    _assert_no_chrome(md, "Installation steps", "MyLib Guide", "Previous page")


def test_docbook_xsl() -> None:
    html = _html(
        '<div class="navheader"><table width="100%" summary="Navigation header"><tr><th colspan="3" align="center">'
        'Chapter 2. Configuration</th></tr><tr><td width="20%" align="left"><a accesskey="p" href="ch01.html">Prev'
        '</a></td><th width="60%" align="center"> </th><td width="20%" align="right"><a accesskey="n" '
        'href="ch03.html">Next</a></td></tr></table><hr></div>'
        '<div class="chapter"><div class="titlepage"><div><div><h1 class="title"><a name="config"></a>'
        'Chapter 2. Configuration</h1></div></div></div><div class="toc"><p><b>Table of Contents</b></p><dl class="toc">'
        '<dt><span class="section"><a href="ch02s01.html">Ports and addresses overview</a></span></dt></dl></div>'
        f'<p>{PROSE}</p>'
        '<div class="note" style="margin-left: 0.5in; margin-right: 0.5in;"><h3 class="title">Note</h3>'
        '<p>The file is read once at start-up.</p></div>'
        '<pre class="programlisting">port = 8080\nhost = "0.0.0.0"</pre>'
        '<div class="table"><a name="t1"></a><p class="title"><b>Table 2.1. Options</b></p>'
        '<div class="table-contents"><table class="table" summary="Options" border="1"><thead><tr><th>Option</th>'
        '<th>Meaning</th></tr></thead><tbody><tr><td>port</td><td>TCP port | default 8080</td></tr></tbody></table>'
        '</div></div></div>'
        '<div class="navfooter"><hr><table width="100%" summary="Navigation footer"><tr><td width="40%" align="left">'
        '<a accesskey="p" href="ch01.html">Prev</a> </td><td width="20%" align="center"> </td><td width="40%" '
        'align="right"> <a accesskey="n" href="ch03.html">Next</a></td></tr><tr><td width="40%" align="left" '
        'valign="top">Chapter 1. Installation steps </td><td width="20%" align="center"><a accesskey="h" '
        'href="index.html">Home</a></td><td width="40%" align="right" valign="top"> Chapter 3. Deployment chapter'
        '</td></tr></table></div>',
        generator="DocBook XSL Stylesheets V1.79.2")
    page = _extract(html)
    md = page.markdown
    assert page.generator == "docbook"
    assert md.startswith("# Chapter 2. Configuration\n")
    assert "> **Note:** The file is read once at start-up." in md
    assert '```\nport = 8080\nhost = "0.0.0.0"\n```' in md
    assert "| port | TCP port \\| default 8080 |" in md
    _assert_no_chrome(md, "Prev", "Next", "Installation steps", "Deployment chapter", "Table of Contents",
                      "Ports and addresses overview")


def test_docbook_admonition_graphics_table_is_a_labelled_quote() -> None:
    html = _html(
        f'<div class="chapter"><h1 class="title">Configuration</h1><p>{PROSE}</p>'
        '<div class="note"><table border="0" summary="Note"><tr><td rowspan="2" align="center" valign="top" '
        'width="25"><img alt="[Note]" src="images/note.png"></td><th align="left">Note</th></tr>'
        '<tr><td align="left" valign="top"><p>The file is read once at start-up.</p></td></tr></table></div></div>',
        generator="DocBook XSL Stylesheets V1.79.2")
    md = _extract(html).markdown
    assert "> **Note:** The file is read once at start-up." in md
    assert "|" not in md


def test_asciidoc_manual_page_keeps_its_header() -> None:
    """AsciiDoc's header is the document's: the title and, in a manual page, the NAME summary."""
    html = _html(
        '<div id="header"><h1>widget-serve(1) Manual Page</h1><h2>NAME</h2><div class="sectionbody">'
        "<p>widget-serve -\n   Serve the widget configuration over HTTP\n</p></div></div>"
        '<div id="content"><div class="sect1"><h2 id="_synopsis">SYNOPSIS</h2><div class="sectionbody">'
        '<div class="verseblock"><pre class="content">widget serve [--port &lt;n&gt;]</pre></div></div></div>'
        f'<div class="sect1"><h2 id="_description">DESCRIPTION</h2><div class="sectionbody"><div class="paragraph">'
        f"<p>{PROSE}</p></div>"
        '<div class="listingblock"><div class="content"><pre><code>$ widget serve</code></pre></div></div>'
        '<div class="paragraph"><p>or:</p></div>'
        '<div class="admonitionblock"><table><tr><td class="icon"><div class="title">Note</div></td>'
        '<td class="content">The port defaults to <code>8080</code>.</td></tr></table></div></div></div></div>'
        '<div id="footnotes"><hr></div>'
        '<div id="footer"><div id="footer-text">Last updated\n 2024-05-31 00:35:55 UTC</div></div>',
        generator="AsciiDoc 10.2.0", title="widget-serve(1)")
    page = _extract(html)
    md = page.markdown
    assert page.generator == "asciidoc"
    assert md.startswith("# widget-serve(1) Manual Page\n\n## NAME\n\nwidget-serve -\nServe the widget")
    assert "## SYNOPSIS\n\n```\nwidget serve [--port <n>]\n```" in md
    assert "```\n$ widget serve\n```\n\nor:\n" in md
    assert "> **Note:** The port defaults to `8080`." in md
    assert not md.rstrip().endswith("---")
    _assert_no_chrome(md, "Last updated", "|")


def test_asciidoctor_article() -> None:
    html = _html(
        '<div id="header"><h1>Widget Guide</h1><div class="details"><span id="author" class="author">Ada Writer'
        '</span><br><span id="revnumber">version 2.1,</span></div><div id="toc" class="toc2"><div id="toctitle">'
        'Table of Contents</div><ul class="sectlevel1"><li><a href="#_setup">1. Setup steps</a></li></ul></div></div>'
        f'<div id="content"><div id="preamble"><div class="sectionbody"><div class="paragraph"><p>{PROSE}</p></div>'
        '</div></div><div class="sect1"><h2 id="_setup">1. Setup</h2><div class="sectionbody">'
        '<div class="listingblock"><div class="content"><pre class="highlight"><code class="language-python" '
        'data-lang="python">import widget\nwidget.serve()</code></pre></div></div>'
        '<div class="admonitionblock tip"><table><tr><td class="icon"><i class="fa icon-tip" title="Tip"></i></td>'
        '<td class="content">Run it behind a proxy.</td></tr></table></div></div></div></div>'
        '<div id="footer"><div id="footer-text">Version 2.1<br>Last updated 2024-05-31</div></div>',
        generator="Asciidoctor 2.0.20", title="Widget Guide")
    page = _extract(html)
    md = page.markdown
    assert page.generator == "asciidoc"
    assert md.startswith("# Widget Guide\n\nThe quick configuration guide")
    assert "```python\nimport widget\nwidget.serve()\n```" in md
    assert "> **Tip:** Run it behind a proxy." in md
    _assert_no_chrome(md, "Ada Writer", "version 2.1", "Table of Contents", "Setup steps", "Last updated")


_TEXINFO_NAV = ('<p>Next: <a href="Ports.html" accesskey="n" rel="next">Ports and addresses</a>, Up: '
                '<a href="Setup.html" accesskey="u" rel="up">Setting up</a> &nbsp; [<a href="index.html#SEC_Contents" '
                'title="Table of contents" rel="contents">Contents</a>][<a href="Concept-Index.html">Index</a>]</p>')


@pytest.mark.parametrize(("division", "nav", "pilcrow"), [
    ("section", f'<div class="header">{_TEXINFO_NAV}</div>', ""),  # Texinfo 6
    ("section-level-extent", f'<div class="nav-panel">{_TEXINFO_NAV}</div>',  # Texinfo 7
     '<a class="copiable-link" href="#Configuration-1"> &para;</a>'),
])
def test_texinfo_node(division: str, nav: str, pilcrow: str) -> None:
    html = _html(
        f'<div class="{division}" id="Configuration">{nav}<hr>'
        f'<h3 class="section" id="Configuration-1">2.1 Configuration{pilcrow}</h3>'
        f'<p>{PROSE}</p><div class="example"><pre class="example">port = 8080\nhost = "0.0.0.0"\n</pre></div>'
        f'<p>compared to</p><div class="example"><pre class="example">port = 0\n</pre></div>'
        f'<hr>{nav}</div>',
        generator="makeinfo", title="Configuration (Widget Manual)")
    page = _extract(html)
    md = page.markdown
    assert page.generator == "texinfo"
    assert md.startswith("### 2.1 Configuration\n\nThe quick configuration guide")
    assert '```\nport = 8080\nhost = "0.0.0.0"\n```\n\ncompared to\n\n```\nport = 0\n```' in md
    _assert_no_chrome(md, "Next:", "Up:", "Ports and addresses", "Setting up", "Index", "¶", "---")


def test_texinfo_top_node_drops_its_table_of_contents() -> None:
    # Laid out a line an entry, as makeinfo writes it: the spaces between links are no prose.
    entries = "".join(f'\n  <li><a id="toc-N{n}" href="N{n}.html">{n} Chapter number {n}</a></li>'
                      for n in range(1, 260))
    html = _html(
        f'<div class="top" id="Top"><h1 class="top">Widget Manual</h1><p>{PROSE}</p></div>'
        '<div class="Contents_element" id="SEC_Contents"><h2 class="contents-heading">Table of Contents</h2>'
        f'<div class="contents"><ul class="no-bullet">{entries}</ul></div></div>',
        generator="makeinfo", title="Top (Widget Manual)")
    md = _extract(html).markdown
    assert md.startswith("# Widget Manual\n\nThe quick configuration guide")
    _assert_no_chrome(md, "Table of Contents", "Chapter number")


def test_doxygen_page_and_member() -> None:
    html = _html(
        '<div id="top"><div id="titlearea"><div id="projectname">Widget</div></div>'
        '<div id="main-nav"><ul><li><a href="index.html">Main Page</a></li><li><a href="classes.html">Classes</a>'
        '</li></ul></div></div>'
        '<div id="side-nav"><div id="nav-tree"><div id="nav-tree-contents">Tree of pages</div></div></div>'
        '<div id="doc-content"><div class="header"><div class="summary"><a href="#pub-methods">Public Member '
        'Functions</a></div><div class="headertitle"><div class="title">Server Class Reference</div></div></div>'
        f'<div class="contents"><div class="textblock"><p>{PROSE}</p></div>'
        '<h2 class="groupheader">Member Function Documentation</h2>'
        '<a id="a1b2"></a><h2 class="memtitle"><span class="permalink"><a href="#a1b2">&#9670;&nbsp;</a></span>serve()'
        '</h2><div class="memitem"><div class="memproto"><table class="memname"><tr><td class="memname">int Server::serve'
        '</td><td>(</td><td class="paramtype">int&#160;</td><td class="paramname"><em>port</em></td><td>)</td></tr>'
        '</table></div><div class="memdoc"><p>Serves the configuration on <code>port</code> until stopped.</p></div>'
        '</div></div></div>'
        '<div id="nav-path" class="navpath"><ul><li class="navelem"><a href="classServer.html">Server</a></li>'
        '<li class="footer">Generated by <a href="https://www.doxygen.org/index.html">doxygen</a> 1.9.4 </li></ul></div>',
        generator="Doxygen 1.9.4", title="Widget: Server Class Reference")
    page = _extract(html)
    md = page.markdown
    assert page.generator == "doxygen"
    assert not any("Generated by" in crumb for crumb in page.breadcrumbs)
    assert md.startswith("Server Class Reference\n\nThe quick configuration guide")
    assert "int Server::serve" in md and "Serves the configuration on `port` until stopped." in md
    _assert_no_chrome(md, "Main Page", "Tree of pages", "Public Member Functions", "Generated by", "Widget\n")


def test_hugo_docsy() -> None:
    html = _html(
        '<header><nav class="td-navbar navbar-dark"><a class="navbar-brand" href="/">MyLib</a>'
        '<ul class="navbar-nav"><li class="nav-item dropdown"><a class="nav-link dropdown-toggle" href="#">Releases'
        '</a><div class="dropdown-menu"><a class="dropdown-item" href="/v1/">v1.0 docs</a></div></li></ul></nav>'
        '</header><div class="container-fluid td-outer"><div class="td-main"><div class="row flex-xl-nowrap">'
        '<aside class="col-12 col-md-3 col-xl-2 td-sidebar d-print-none"><nav class="td-sidebar-nav">'
        '<a href="/docs/install/">Installation steps</a></nav></aside>'
        '<aside class="d-none d-xl-block col-xl-2 td-sidebar-toc d-print-none"><div class="td-page-meta ms-2 pb-1 pt-2 mb-0">'
        '<a href="https://github.com/x/edit/main/content/en/docs/config.md" class="td-page-meta--edit">Edit this page'
        '</a><a href="https://github.com/x/issues/new" class="td-page-meta--issue">Create documentation issue</a>'
        '</div><div class="td-toc"><nav id="TableOfContents"><ul><li><a href="#ports">Ports heading link</a></li>'
        '</ul></nav></div></aside><main class="col-12 col-md-9 col-xl-8 ps-md-5" role="main">'
        '<nav aria-label="breadcrumb" class="td-breadcrumbs"><ol class="breadcrumb">'
        '<li class="breadcrumb-item"><a href="/docs/">Documentation</a></li>'
        '<li class="breadcrumb-item"><a href="/docs/guide/">User Guide</a></li>'
        '<li class="breadcrumb-item active" aria-current="page">Configuration</li></ol></nav>'
        '<div class="td-content"><h1>Configuration</h1><div class="lead">How to configure the server.</div>'
        f'<p>{PROSE}</p>'
        '<div class="alert alert-warning" role="alert"><h4 class="alert-heading">Warning</h4>'
        '<p>Reload the service after every change.</p></div>'
        '<h2 id="ports">Ports<a class="td-heading-self-link" href="#ports" aria-label="Heading self-link"></a></h2>'
        '<p>Ports are numbers.</p>'
        '<div class="td-page-meta__lastmod">Last modified May 1, 2024: <a href="https://github.com/x/commit/abc">'
        'Fix typo (abc123)</a></div></div></main></div></div></div>',
        generator="Hugo 0.125.4", head='<link rel="stylesheet" href="/scss/main.min.css">')
    html = html.replace("<body>", '<body class="td-page td-documentation">')
    page = _extract(html)
    md = page.markdown
    assert page.generator == "hugo-docsy"
    assert md.startswith("# Configuration\n")
    assert "## Ports\n" in md
    assert "> **Warning:** Reload the service after every change." in md
    _assert_no_chrome(md, "Releases", "Installation steps", "Edit this page", "documentation issue",
                      "Ports heading link", "Last modified", "Documentation")
    assert page.breadcrumbs == ["Documentation", "User Guide", "Configuration"]


# --------------------------------------------------------------------------
# API reference generators
# --------------------------------------------------------------------------

def test_rustdoc() -> None:
    html = _html(
        '<nav class="sidebar"><div class="sidebar-crate"><h2><a href="../mylib/index.html">mylib</a></h2>'
        '<div class="version">2.0.1</div></div><div class="sidebar-elems"><section id="rustdoc-toc">'
        '<h3><a href="#implementations">Implementations</a></h3><ul class="block"><li><a href="#method.bind">'
        'bind method link</a></li></ul></section></div></nav><main><div class="width-limiter">'
        '<rustdoc-search></rustdoc-search><section id="main-content" class="content">'
        '<div class="main-heading"><div class="rustdoc-breadcrumbs"><a href="index.html">mylib</a>::<a '
        'href="server/index.html">server</a></div><h1>Struct <span class="struct">Server</span>'
        '<button id="copy-path" title="Copy item path to clipboard">Copy item path</button></h1>'
        '<rustdoc-toolbar></rustdoc-toolbar><span class="sub-heading"><a class="src" href="../src/mylib/server.rs.html#10">'
        'Source</a></span></div>'
        '<pre class="rust item-decl"><code>pub struct Server { /* private fields */ }</code></pre>'
        f'<details class="toggle top-doc" open=""><summary class="hideme"><span>Expand description</span></summary>'
        f'<div class="docblock"><p>{PROSE}</p></div></details>'
        '<h2 id="implementations" class="section-header">Implementations<a href="#implementations" class="anchor">§'
        '</a></h2><div id="implementations-list"><details class="toggle implementors-toggle" open=""><summary>'
        '<section id="impl-Server" class="impl"><a class="src rightside" href="../src/mylib/server.rs.html#20">Source'
        '</a><a href="#impl-Server" class="anchor">§</a><h3 class="code-header">impl <a class="struct" '
        'href="struct.Server.html">Server</a></h3></section></summary><div class="impl-items">'
        '<details class="toggle method-toggle" open=""><summary><section id="method.bind" class="method">'
        '<span class="rightside"><span class="since" title="Stable since Rust version 1.0.0">1.0.0</span> · '
        '<a class="src" href="../src/mylib/server.rs.html#25">Source</a></span><h4 class="code-header">pub fn '
        '<a href="#method.bind" class="fn">bind</a>(addr: &amp;<a class="primitive" href="https://doc.rust-lang.org/'
        'nightly/std/primitive.str.html">str</a>) -&gt; <a class="struct" href="struct.Server.html">Server</a></h4>'
        '</section></summary><div class="docblock"><p>Binds the server to <code>addr</code>.</p></div></details>'
        '</div></details></div></section></div></main>',
        generator="rustdoc", title="Server in mylib::server - Rust")
    page = _extract(html, "https://docs.example.org/mylib/server/struct.Server.html")
    md = page.markdown
    assert page.generator == "rustdoc"
    assert "```rust\npub struct Server { /* private fields */ }\n```" in md
    assert "#### `pub fn bind(addr: &str) -> Server`" in md
    assert "### `impl Server`" in md
    assert PROSE in md and "Binds the server to `addr`." in md
    _assert_no_chrome(md, "Copy item path", "Source", "§", "1.0.0", "bind method link", "2.0.1", "Expand description")
    assert page.breadcrumbs == ["mylib", "server"]


def test_rustdoc_examples_and_signatures_lose_their_buttons_and_tooltips() -> None:
    """Older rustdoc (Debian's std docs) writes a "Run" playground link after each example, a
    "Notable traits" tooltip inside signatures and a bare "ⓘ" over an example that panics."""
    html = _html(
        '<section id="main-content" class="content"><h1 class="fqn">Struct <a class="struct" href="#">Vec</a></h1>'
        f'<details class="rustdoc-toggle top-doc" open=""><div class="docblock"><p>{PROSE}</p>'
        '<div class="example-wrap"><pre class="rust rust-example-rendered"><code>let v = vec![1];</code></pre>'
        '<a class="test-arrow" target="_blank" href="https://play.rust-lang.org/?code=let%20v%20%3D%20vec!%5B1%5D">'
        'Run</a></div><p>You cannot do this:</p><div class="information"><div class="tooltip should_panic">ⓘ'
        '</div></div><div class="example-wrap"><pre class="rust rust-example-rendered should_panic">'
        '<code>v[6];</code></pre></div></div></details>'
        '<div class="impl-items"><section id="method.new" class="method"><h4 class="code-header">pub const fn '
        '<a href="#method.new" class="fnname">new</a>() -&gt; Vec&lt;T&gt;<span class="notable-traits">'
        '<span class="notable-traits-tooltip">ⓘ<span class="notable-traits-tooltiptext"><span class="docblock">'
        '<span class="notable">Notable traits for Vec&lt;u8&gt;</span></span></span></span></span></h4></section>'
        '<div class="docblock"><p>Constructs a new, empty vector.</p></div></div></section>',
        generator="rustdoc", title="Vec in std::vec - Rust")
    md = _extract(html, "https://docs.example.org/std/vec/struct.Vec.html").markdown
    assert "```rust\nlet v = vec![1];\n```\n\nYou cannot do this:\n\n```rust\nv[6];\n```" in md
    assert "`pub const fn new() -> Vec<T>`" in md
    _assert_no_chrome(md, "Run", "play.rust-lang.org", "Notable traits", "ⓘ")


def test_javadoc() -> None:
    html = (
        '<!DOCTYPE HTML><html lang="en"><head><!-- Generated by javadoc (17) on Wed May 01 10:00:00 UTC 2024 -->'
        '<title>Server (mylib 2.0 API)</title><meta name="generator" content="javadoc/ClassWriterImpl">'
        '</head><body class="class-declaration-page"><div class="flex-box"><header role="banner" class="flex-header">'
        '<nav role="navigation"><div class="top-nav" id="navbar-top"><ul id="navbar-top-firstrow" class="nav-list">'
        '<li><a href="package-summary.html">Package</a></li><li class="nav-bar-cell1-rev">Class</li>'
        '<li><a href="package-tree.html">Tree</a></li></ul></div><div class="sub-nav"><ul class="sub-nav-list">'
        '<li>Summary:&nbsp;</li><li><a href="#method-summary">Method</a></li></ul></div></nav></header>'
        '<div class="flex-content"><main role="main"><div class="header"><div class="sub-title">'
        '<span class="package-label-in-type">Package</span>&nbsp;<a href="package-summary.html">org.mylib</a></div>'
        '<h1 title="Class Server" class="title">Class Server</h1></div>'
        '<section class="class-description" id="class-description"><div class="type-signature">'
        '<span class="modifiers">public class </span><span class="element-name type-name-label">Server</span>'
        '\n<span class="extends-implements">extends java.lang.Object</span></div>'
        f'<div class="block">{PROSE}</div></section>'
        '<section class="details"><ul class="details-list"><li><section class="method-details" id="method-detail">'
        '<h2>Method Details</h2><ul class="member-list"><li><section class="detail" id="bind(java.lang.String)">'
        '<h3>bind</h3><div class="member-signature"><span class="modifiers">public</span>&nbsp;'
        '<span class="return-type">void</span>&nbsp;<span class="element-name">bind</span>'
        '<wbr><span class="parameters">(java.lang.String&nbsp;address)</span></div>'
        '<div class="block">Binds the server to an address.</div></section></li></ul></section></li></ul></section>'
        '</main><footer role="contentinfo"><hr><p class="legal-copy"><small>Copyright © 2024 Example. '
        'All rights reserved.</small></p></footer></div></div></body></html>')
    page = _extract(html, "https://docs.example.org/api/org/mylib/Server.html")
    md = page.markdown
    assert page.generator == "javadoc"
    assert "# Class Server\n" in md and "### bind\n" in md
    # The member list's items hold headings: they are sections, not list items.
    assert "\n### bind\n\n```\npublic void bind(java.lang.String address)\n```\n" in md
    assert "```\npublic class Server extends java.lang.Object\n```" in md
    assert "Binds the server to an address." in md
    _assert_no_chrome(md, "Tree", "Summary:", "Copyright", "All rights reserved")


def test_javadoc_before_jdk17_lays_out_sections_in_lists() -> None:
    html = (
        '<!DOCTYPE HTML><html lang="en"><head><!-- Generated by javadoc (11.0.16) on Tue Jan 03 2023 -->'
        '<title>Theories (JUnit API)</title></head><body><header role="banner"><nav role="navigation">'
        '<div class="topNav"><ul class="navList"><li><a href="package-summary.html">Package</a></li></ul></div>'
        '</nav></header><main role="main"><div class="header"><h2 title="Class Theories" class="title">'
        'Class Theories</h2></div><div class="contentContainer"><div class="description"><ul class="blockList">'
        '<li class="blockList"><dl><dt>All Implemented Interfaces:</dt><dd><code>Describable</code></dd></dl><hr>'
        '<pre>public class Theories\nextends BlockJUnit4ClassRunner</pre>'
        f'<div class="block">{PROSE}</div></li></ul></div>'
        '<div class="summary"><ul class="blockList"><li class="blockList"><section class="methodSummary">'
        '<ul class="blockList"><li class="blockList"><h3>Method Summary</h3>'
        '<table class="memberSummary"><caption><span>Methods</span><span class="tabEnd">&nbsp;</span></caption>'
        '<tr><th class="colFirst" scope="col">Modifier and Type</th><th class="colSecond" scope="col">Method</th>'
        '</tr><tr class="altColor"><td class="colFirst"><code>Statement</code></td>'
        '<th class="colSecond"><code>methodBlock(FrameworkMethod method)</code></th></tr></table>'
        '</li></ul></section></li></ul></div><div class="details"><ul class="blockList"><li class="blockList">'
        '<section class="methodDetails"><ul class="blockList"><li class="blockList"><h3>Method Detail</h3>'
        '<ul class="blockListLast"><li class="blockList"><h4>methodBlock</h4>'
        '<pre class="methodSignature">public Statement methodBlock\u200b(FrameworkMethod method)</pre>'
        '<div class="block">Returns a Statement that runs the method.</div></li></ul></li></ul></section></li>'
        '</ul></div></div></main></body></html>')
    page = _extract(html, "https://docs.example.org/api/org/junit/experimental/theories/Theories.html")
    md = page.markdown
    assert page.generator == "javadoc"
    assert ("All Implemented Interfaces:\n:   `Describable`\n\n---\n\n```\npublic class Theories\n"
            "extends BlockJUnit4ClassRunner\n```\n\n" + PROSE) in md
    assert ("\n### Method Summary\n\nMethods\n\n| Modifier and Type | Method |\n| --- | --- |\n"
            "| `Statement` | `methodBlock(FrameworkMethod method)` |\n") in md
    assert ("\n### Method Detail\n\n#### methodBlock\n\n```\npublic Statement methodBlock(FrameworkMethod method)"
            "\n```\n\nReturns a Statement that runs the method.\n") in md
    assert not re.search(r"^\s*[-*] ", md, re.M)


# --------------------------------------------------------------------------
# Detection, registry and overrides
# --------------------------------------------------------------------------

@pytest.mark.parametrize(("generator", "expected"), [
    ("Docusaurus v3.5.2", "docusaurus"),
    ("mkdocs-1.6.0, mkdocs-material-9.5.18", "mkdocs-material"),
    ("mkdocs-1.5.3", "mkdocs"),
    ("VitePress v1.3.4", "vitepress"),
    ("GitBook 3.2.3", "gitbook"),
    ("DocBook XSL Stylesheets V1.79.2", "docbook"),
    ("AsciiDoc 10.2.0", "asciidoc"),
    ("Asciidoctor 2.0.20", "asciidoc"),
    ("makeinfo", "texinfo"),
    ("texi2any", "texinfo"),
    ("Doxygen 1.9.4", "doxygen"),
    ("rustdoc", "rustdoc"),
    ("javadoc/ClassWriterImpl", "javadoc"),
    ("sphinx-7.2.6, furo 2024.01.29", "sphinx-furo"),
])
def test_detect_by_generator_meta(generator: str, expected: str) -> None:
    assert _detect(_html("<main><p>x</p></main>", generator=generator)) == expected


def test_detect_by_dom_markers_and_unknown() -> None:
    assert _detect(_html("<p>x</p>", head=SPHINX_HEAD)) == "sphinx"
    assert _detect(_html("<div id='__docusaurus'><p>x</p></div>")) == "docusaurus"
    assert _detect("<html><head><!-- Book generated using mdBook --></head><body><p>x</p></body></html>") == "mdbook"
    assert _detect("<html><head><!-- Generated by javadoc (1.8.0_292) --></head><body><p>x</p></body></html>") \
        == "javadoc"
    assert _detect(_html("<div class='md-container'><p>x</p></div>")) == "mkdocs-material"
    # The built-in mkdocs theme writes no generator meta; its search dialog is on every page.
    assert _detect(_html("<div role='main'><p>x</p></div><div class='modal' id='mkdocs_search_modal'></div>")) \
        == "mkdocs"
    # A Sphinx theme that loads its scripts at the end of <body> (SQLAlchemy's) still links the
    # highlighting styles every Sphinx build writes.
    assert _detect(_html("<div id='docs-body' role='main'><p>x</p></div>"
                         "<script src='../_static/documentation_options.js'></script>",
                         head="<link rel='stylesheet' href='../_static/pygments.css'>")) == "sphinx"
    assert _detect(_html("<div id='header'><h1>T</h1></div><div id='content'><p>x</p></div>"
                         "<div id='footer'><div id='footer-text'>Last updated</div></div>")) == "asciidoc"
    assert _detect(_html("<main><p>x</p></main>", generator="WordPress 6.5")) is None
    # Hugo's meta is on every Hugo site, most of them blogs: only its documentation themes are "hugo".
    assert _detect(_html("<main class='main'><article class='post-single'><p>x</p></article></main>",
                         generator="Hugo 0.125.4")) is None
    for theme in ("<article class='markdown book-article'><p>x</p></article>",
                  "<main class='gdoc-page'><article class='gdoc-markdown'><p>x</p></article></main>",
                  "<div id='body-inner'><p>x</p></div>", "<div id='R-body-inner'><p>x</p></div>"):
        assert _detect(_html(theme, generator="Hugo 0.125.4")) == "hugo"
        assert _detect(_html(theme)) is None
    # hugo-book writes no generator meta: its menu and page are enough.
    assert _detect(_html("<aside class='book-menu'></aside><div class='book-page'><article class='markdown'>"
                         "<p>x</p></article></div>")) == "hugo"
    assert _detect(_html("<main><p>x</p></main>")) is None


def test_registry_profiles_are_frozen_data() -> None:
    names = [p.name for p in REGISTRY]
    assert len(names) == len(set(names))
    for expected in ("sphinx", "sphinx-rtd", "sphinx-furo", "sphinx-pydata", "mkdocs-material", "mkdocs",
                     "docusaurus", "vitepress", "mdbook", "gitbook", "docbook", "asciidoc", "texinfo", "doxygen",
                     "hugo-docsy", "hugo", "rustdoc", "javadoc"):
        assert expected in names
    profile = REGISTRY[0]
    assert isinstance(profile, GeneratorProfile) and profile.main
    with pytest.raises(AttributeError):
        profile.name = "x"  # type: ignore[misc]


def test_unknown_site_has_no_generator_and_uses_generic_path() -> None:
    page = _extract(_html(f"<div id='sidebar'><a href='/'>Home link text</a></div><main><h1>Plain</h1><p>{PROSE}</p>"
                          "</main>"))
    assert page.generator is None
    assert page.markdown.startswith("# Plain\n")
    assert "Home link text" not in page.markdown


def test_content_selector_overrides_profile() -> None:
    html = _html(f'<div class="body" role="main"><h1>Wrong</h1><p>{PROSE}</p></div>'
                 f'<div id="real"><h1>Right one</h1><p>{PROSE} Extra words.</p></div>', head=SPHINX_HEAD)
    page = extract_page(html, "https://x.org/", content_selector="div#real")
    assert page.markdown.startswith("# Right one\n") and "Wrong" not in page.markdown
    assert page.generator == "sphinx"
    # A selector that matches nothing leaves the profile in charge.
    assert extract_page(html, "https://x.org/", content_selector="section.none").markdown.startswith("# Wrong")
    with pytest.raises(ValueError):
        extract_page(html, "https://x.org/", content_selector="div[")


def test_parsed_doc_is_used_instead_of_html() -> None:
    html = _html(f"<main><h1>Parsed</h1><p>{PROSE}</p></main>")
    doc = lxml.html.document_fromstring(html)
    page = extract_page("", "https://x.org/", doc=doc)  # html is not parsed again
    assert page.markdown.startswith("# Parsed\n")
    parsel = import_prerequisite("parsel")
    root = parsel.Selector(text=html).root
    assert extract_page("<p>ignored</p>", "https://x.org/", doc=root).markdown.startswith("# Parsed\n")


def test_converter_registry() -> None:
    assert "markdownify" in available_converters()
    html = _html(f"<main><h1>Conv</h1><p>{PROSE}</p></main>")
    assert extract_page(html, "https://x.org/", converter="markdownify").markdown.startswith("# Conv\n")
    with pytest.raises(ValueError):
        extract_page(html, "https://x.org/", converter="no-such-converter")
    with pytest.raises(ValueError):
        get_converter("no-such-converter")
    assert extract_page(html, "https://x.org/", converter=None).markdown.startswith("# Conv\n")  # None = default


def test_html_to_markdown_converter_registered_when_adapter_exists() -> None:
    import_prerequisite("harvester.extract.converters.html_to_markdown")
    assert "html-to-markdown" in available_converters()
    html = _html(f"<main><h1>Conv</h1><p>{PROSE}</p></main>")
    assert "Conv" in extract_page(html, "https://x.org/", converter="html-to-markdown").markdown


def test_generator_field_is_last_and_optional() -> None:
    page = ExtractedPage("t", "md\n", "en", None, [], [], None, 0.5, False)
    assert page.generator is None


def test_conservative_cleaner_keeps_prose_in_chrome_named_elements() -> None:
    instructions = ("To configure the proxy, open the settings file, set the field proxy_url to the address of "
                    "your proxy, set proxy_user and proxy_password, then restart the service and check the log for "
                    "a line that confirms the proxy was reached.")
    html = _html(f"<main><h1>Proxy</h1><p>{PROSE}</p><div class='breadcrumbs'><p>{instructions}</p></div>"
                 "<div class='breadcrumbs'><a href='/'>Home</a> / <a href='/docs'>Docs</a></div>"
                 f"<aside role='complementary'><p>{instructions}</p></aside></main>")
    md = _extract(html).markdown
    assert md.count("proxy\\_password") == 2
    assert "Docs" not in md


def test_quality_reflects_boilerplate() -> None:
    clean = _extract(_html(f"<main><h1>Q</h1><p>{PROSE}</p><p>{PROSE}</p></main>"))
    noisy = _extract(_html(f"<main><h1>Q</h1><p>{PROSE}</p>" + "<p>Copyright 2024 Example Inc.</p>" * 6
                           + "<p>Edit this page on our tracker please</p>" * 4 + "</main>"))
    assert noisy.quality < clean.quality


# --------------------------------------------------------------------------
# Real Sphinx sites (Debian packages)
# --------------------------------------------------------------------------

DEBIAN = "/usr/share/doc/python-{}-doc/html"


def _debian_page(package: str, name: str) -> str:
    path = os.path.join(DEBIAN.format(package), name)
    if os.path.exists(path + ".gz") and not os.path.exists(path):
        with gzip.open(path + ".gz", "rt", encoding="utf-8") as fh:
            return fh.read()
    if not os.path.exists(path):
        missing_prerequisite(f"{path} not installed (apt-get install python-{package}-doc)")
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def test_djangos_theme_keeps_its_header_navigation_and_footer_out() -> None:
    """Django's own Sphinx theme lays the page out on a YUI grid inside div.document."""
    html = _html(
        '<div class="document"><div id="custom-doc" class="yui-t6"><div id="hd">'
        '<h1><a href="../../index.html">Django 3.2 documentation</a></h1><div id="global-nav">'
        '<a href="../../index.html">Home</a> | <a href="../../contents.html">Table of contents</a></div>'
        '<div class="nav">&laquo; <a href="models.html">previous</a> | <a href="../index.html">up</a> | '
        '<a href="aggregation.html">next</a> &raquo;</div></div><div id="bd"><div id="yui-main"><div class="yui-b">'
        '<div class="yui-g" id="topics-db-queries"><div class="section" id="s-making-queries">'
        f'<h1>Making queries<a class="headerlink" href="#making-queries">¶</a></h1><p>{PROSE}</p></div></div>'
        '</div></div><div class="yui-b" id="sidebar"><div class="sphinxsidebar"><h3>Browse</h3><ul><li>'
        '<a href="models.html">Prev: Models</a></li></ul></div></div></div><div id="ft"><div class="nav">'
        '<a href="models.html">previous</a> | <a href="aggregation.html">next</a></div></div></div></div>',
        head='<script src="../../_static/documentation_options.js"></script>', title="Making queries")
    page = _extract(html, "https://docs.example.org/topics/db/queries.html")
    assert page.generator == "sphinx"
    assert page.markdown == f"# Making queries\n\n{PROSE}\n"


def test_real_flask_pallets_theme() -> None:
    page = extract_page(_debian_page("flask", "api.html"), "http://127.0.0.1:18300/api.html")
    md = page.markdown
    assert page.generator == "sphinx"
    assert "\n`class flask.Flask(import_name, static_url_path=None, static_folder='static', " in md
    assert "*class*" not in md
    assert re.search(r"^    > \*\*New in version 0\.7:\*\* The static\\_url\\_path", md, re.M)
    assert "Quick search" not in md and "¶" not in md
    assert page.breadcrumbs == ["Flask Documentation (2.2.x)", "API"]


def test_real_requests_alabaster_theme() -> None:
    page = extract_page(_debian_page("requests", "api.html"), "http://127.0.0.1:18300/api.html")
    md = page.markdown
    assert page.generator == "sphinx"
    assert "`requests.get(url, params=None, **kwargs)` [\\[source\\]](http://127.0.0.1:18300/_modules/" in md
    assert re.search(r"^ *> \*\*(Note|Warning):\*\*", md, re.M)
    assert "Quick search" not in md and "Powered by" not in md


def test_real_scrapy_read_the_docs_theme() -> None:
    page = extract_page(_debian_page("scrapy", "topics/settings.html"), "http://127.0.0.1:18300/topics/settings.html")
    md = page.markdown
    assert page.generator == "sphinx-rtd"
    assert md.startswith("# Settings\n")
    assert re.search(r"^(?:    )?> \*\*Note:\*\*", md, re.M)
    assert "View page source" not in md and "Previous" not in md and "Read the Docs" not in md
    assert page.breadcrumbs[-1] == "Settings"


def _real_page(path: str, package: str) -> str:
    if not os.path.exists(path):
        missing_prerequisite(f"{path} not installed (apt-get install {package})")
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def test_real_mkdocs_builtin_theme_without_a_generator_meta() -> None:
    html = _real_page("/usr/share/doc/mkdocs/html/user-guide/configuration.html", "mkdocs-doc")
    assert 'name="generator"' not in html
    page = extract_page(html, "http://127.0.0.1:18300/user-guide/configuration.html")
    assert page.generator == "mkdocs"
    assert page.markdown.startswith("# Configuration\n\nGuide to all available configuration settings.\n")
    assert "\n## Introduction\n" in page.markdown
    _assert_no_chrome(page.markdown, "Edit on GitHub", "Keyboard Shortcuts", "Documentation built with")


def test_real_doxygen_member_tables_are_cut_at_their_headings() -> None:
    html = _real_page("/usr/share/doc/doxygen/html/examples/afterdoc/html/class_afterdoc___test.html",
                      "doxygen-doc")
    md = extract_page(html, "http://127.0.0.1:18300/class_afterdoc___test.html").markdown
    assert md.startswith("Afterdoc\\_Test Class Reference\n")  # the project's banner is gone
    assert "\n## Public Member Functions\n\n| void | **member** () |\n| --- | --- |\n|  | a member function. |\n" in md
    assert "|  | |" not in md
