"""The page classifier on realistic pages: what single-page apps, block pages, login walls and
soft 404s look like when fetched without a browser, and content that mentions the same words."""

from __future__ import annotations

import pytest

from harvester.extract.classify import PageType, classify_page
from tests.conftest import doc_root

PROSE = "<p>" + "Configure the application with environment variables and a settings file. " * 30 + "</p>"

CREATE_REACT_APP = """<!doctype html><html lang="en"><head><meta charset="utf-8"/>
<link rel="icon" href="/favicon.ico"/><meta name="viewport" content="width=device-width,initial-scale=1"/>
<title>React App</title><script defer="defer" src="/static/js/main.8c3b1d2e.js"></script>
<link href="/static/css/main.073c9b0a.css" rel="stylesheet"></head>
<body><noscript>You need to enable JavaScript to run this app.</noscript><div id="root"></div></body></html>"""

NEXT_SHELL = """<!DOCTYPE html><html><head><meta charSet="utf-8"/><title>Docs</title>
<script src="/_next/static/chunks/webpack-1.js" defer=""></script><script src="/_next/static/chunks/main-2.js" defer=""></script>
</head><body><div id="__next"><div class="spinner">Loading…</div></div>
<script id="__NEXT_DATA__" type="application/json">{"props":{"pageProps":{}},"page":"/docs/[slug]"}</script></body></html>"""

ANGULAR_SHELL = """<!doctype html><html><head><title>Knowledge base</title><base href="/">
<link rel="stylesheet" href="styles.css"></head><body><app-root></app-root>
<script src="runtime.js" type="module"></script><script src="main.js" type="module"></script></body></html>"""

DOCSIFY = """<!DOCTYPE html><html><head><title>My docs</title></head><body>
<nav><a href="#/">Home</a> <a href="#/guide">Guide</a> <a href="#/api">API</a> <a href="#/faq">FAQ</a></nav>
<div id="app">Please wait...</div>
<script>window.$docsify = {name: 'docs', loadSidebar: true}</script>
<script src="//cdn.jsdelivr.net/npm/docsify@4"></script></body></html>"""

CLOUDFLARE = """<!DOCTYPE html><html lang="en-US"><head><title>Just a moment...</title>
<meta http-equiv="X-UA-Compatible" content="IE=Edge"><meta name="robots" content="noindex,nofollow">
</head><body><div class="main-wrapper" role="main"><div class="main-content">
<h1 class="zone-name-title h1">docs.example.com</h1><h2 id="challenge-running" class="h2">Checking if the site connection is secure</h2>
<noscript><div class="h2"><span id="challenge-error-text">Enable JavaScript and cookies to continue</span></div></noscript>
</div></div><script>(function(){window._cf_chl_opt={cvId: '3',cZone: "docs.example.com",cType: 'managed'};
var a = document.createElement('script');a.src = '/cdn-cgi/challenge-platform/h/g/orchestrate/chl_page/v1?ray=8';
document.getElementsByTagName('head')[0].appendChild(a);}());</script></body></html>"""

AKAMAI_DENIED = """<HTML><HEAD>
<TITLE>Access Denied</TITLE>
</HEAD><BODY>
<H1>Access Denied</H1>
You don't have permission to access "http&#58;&#47;&#47;www&#46;example&#46;com&#47;docs&#47;" on this server.<P>
Reference&#32;&#35;18&#46;6f3d3e17&#46;1701350000&#46;2a9c1e3
</BODY>
</HTML>"""

TOO_MANY = """<html><head><title>429 Too Many Requests</title></head><body>
<center><h1>429 Too Many Requests</h1></center><hr><center>nginx</center></body></html>"""

RECAPTCHA = """<html><head><title>Verification</title><script src="https://www.google.com/recaptcha/api.js" async defer></script></head>
<body><form action="/verify" method="POST"><p>Our systems have detected unusual traffic from your computer network.</p>
<div class="g-recaptcha" data-sitekey="6Lc_aCMTAAAAABx7u2W0WPXnVbI_v6ZdbM6rYf16"></div><input type="submit"></form></body></html>"""

LOGIN = """<!DOCTYPE html><html><head><title>Sign in · Wiki</title><script src="/assets/app.js"></script></head>
<body><main><h1>Sign in to Wiki</h1><form action="/session" method="post">
<label for="login">Username or email address</label><input type="text" name="login" id="login">
<label for="password">Password</label><input type="password" name="password" id="password">
<input type="submit" value="Sign in"></form><p><a href="/password_reset">Forgot password?</a></p></main></body></html>"""

SOFT_404 = """<!DOCTYPE html><html><head><title>Page not found | Example Docs</title><script src="/main.js"></script></head>
<body><header><a href="/">Example Docs</a></header><main><h1>Page Not Found</h1>
<p>We could not find what you were looking for.</p><p><a href="/">Back to the home page</a></p></main>
<footer>© 2024 Example</footer></body></html>"""

ARTICLE_WITH_TRIGGERS = f"""<html><head><title>Protecting forms with a captcha</title><script src="/analytics.js"></script></head>
<body><article><h1>Protecting your login form</h1><p>This guide shows how to add a captcha (g-recaptcha) to the
sign in page, what to do about "Too Many Requests" answers, and why "Access Denied" pages confuse crawlers.</p>
{PROSE}<form><input type="password"></form></article></body></html>"""

DOCUSAURUS_CONTENT = f"""<!doctype html><html><head><meta name="generator" content="Docusaurus v3.1.0">
<title>Installation | Docs</title><script src="/assets/js/runtime~main.js" defer></script></head>
<body><div id="__docusaurus"><nav>Docs Blog</nav><main><article><h1>Installation</h1>{PROSE}</article></main></div>
</body></html>"""


@pytest.mark.parametrize(("html", "reason"), [
    (CREATE_REACT_APP, "empty_mount"),
    (NEXT_SHELL, "empty_mount"),
    (ANGULAR_SHELL, "empty_mount"),
    (DOCSIFY, "empty_mount"),
])
def test_single_page_app_shells(html: str, reason: str) -> None:
    verdict = classify_page(html)
    assert (verdict.type, verdict.reason) == (PageType.APP_SHELL, reason)
    assert verdict.has_scripts


def test_hash_routing_and_noscript_are_shell_signs_too() -> None:
    hash_app = DOCSIFY.replace('id="app"', 'id="view"')
    assert classify_page(hash_app).reason == "hash_routing"
    noscript = CREATE_REACT_APP.replace('<div id="root"></div>', '<div id="content"></div>')
    assert classify_page(noscript).reason == "noscript"


@pytest.mark.parametrize(("html", "status", "reason"), [
    (CLOUDFLARE, 200, "block_title"),
    (CLOUDFLARE, 403, "status_403"),
    (AKAMAI_DENIED, 200, "block_title"),
    (TOO_MANY, 200, "block_title"),
    (TOO_MANY, 429, "status_429"),
    (RECAPTCHA, 200, "captcha"),
])
def test_block_pages_even_when_served_with_200(html: str, status: int, reason: str) -> None:
    verdict = classify_page(html, status)
    assert (verdict.type, verdict.reason) == (PageType.BLOCKED, reason)


def test_login_walls() -> None:
    assert classify_page(LOGIN).type is PageType.LOGIN_WALL
    assert classify_page("<html><body><p>Authorization required</p></body></html>", 401).type is PageType.LOGIN_WALL


def test_error_pages() -> None:
    assert (classify_page(SOFT_404).type, classify_page(SOFT_404).reason) == (PageType.ERROR_PAGE, "soft_404")
    assert classify_page(f"<html><body>{PROSE}</body></html>", 500).type is PageType.ERROR_PAGE


def test_content_that_mentions_the_trigger_words_is_content() -> None:
    assert classify_page(ARTICLE_WITH_TRIGGERS).type is PageType.CONTENT
    assert classify_page(DOCUSAURUS_CONTENT).type is PageType.CONTENT


def test_empty_pages_and_what_extraction_found() -> None:
    assert classify_page("").type is PageType.EMPTY
    assert classify_page("<html><body></body></html>").type is PageType.EMPTY
    # Text that extraction could not use: empty without scripts, an app shell with them.
    short = "<html><body><div>Menu</div></body></html>"
    assert classify_page(short, extracted_chars=0).type is PageType.EMPTY
    scripted = "<html><body><div>Menu</div><script src=/app.js></script></body></html>"
    assert classify_page(scripted, extracted_chars=0).type is PageType.APP_SHELL
    # JSON data blocks are not scripts that could render anything.
    data_only = '<html><body><div>Menu</div><script type="application/ld+json">{}</script></body></html>'
    assert not classify_page(data_only).has_scripts


def test_real_sphinx_pages_are_content() -> None:
    root = doc_root("flask")
    for name in ("index.html", "quickstart.html", "api.html"):
        verdict = classify_page((root / name).read_bytes())
        assert verdict.type is PageType.CONTENT, (name, verdict)


# --------------------------------------------------------------------------
# Search pages and navigation-only pages: decided from the page, not from its URL
# --------------------------------------------------------------------------

def _generated(site: str, page: str) -> str:
    from tests.test_generated_sites import GENERATED

    return (GENERATED / "site" / site / f"{page}.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("site", ["sphinx-alabaster", "sphinx-classic", "sphinx-custom"])
def test_a_generated_search_page_is_a_search_page(site):
    verdict = classify_page(_generated(site, "search"))
    assert (verdict.type, verdict.reason) == (PageType.SEARCH_PAGE, "search_form")


@pytest.mark.parametrize("site", ["sphinx-alabaster", "sphinx-classic", "sphinx-custom", "mkdocs-readthedocs"])
def test_pages_with_a_search_box_in_their_sidebar_are_content(site):
    assert classify_page(_generated(site, "usage"), extracted_chars=1000).type is PageType.CONTENT


def test_a_docs_page_about_search_is_content():
    html = ("<html><head><title>Search</title></head><body><nav><input type=search name=q></nav><main><h1>Search"
            f"</h1><p>{PROSE}</p><form><input type=text name=q></form></main></body></html>")
    assert classify_page(html, extracted_chars=len(PROSE)).type is PageType.CONTENT


def test_a_search_form_page_is_a_search_page():
    html = ("<html><head><title>Search results</title></head><body><main><h1>Search</h1><form>"
            "<input type=text name=query><button>Go</button></form><p>No results yet.</p></main></body></html>")
    assert classify_page(html, extracted_chars=40).type is PageType.SEARCH_PAGE


NAV_ONLY = ('<html><head><title>Guide</title></head><body><header><a href="/">Acme</a> <a href="/g">Guide</a>'
            '</header><div class="md-sidebar"><ul>' + "".join(
                f'<li><a href="/g#{i}">Guide chapter {i} about widgets</a></li>' for i in range(10))
            + '</ul></div><main id="app"></main>{script}</body></html>')


def test_text_only_in_menus_and_sidebars_is_navigation_only():
    scripted = NAV_ONLY.replace("{script}", "<script>render()</script>")
    verdict = classify_page(scripted, extracted_chars=400)
    assert (verdict.type, verdict.reason) == (PageType.APP_SHELL, "navigation_only")
    static = NAV_ONLY.replace("{script}", "")
    assert (classify_page(static, extracted_chars=400).type, classify_page(static).reason) == (
        PageType.EMPTY, "navigation_only")


def test_a_layout_wrapper_named_sidebar_is_not_navigation():
    html = (f'<html><body><div class="with-sidebar"><nav>menu</nav><main><h1>Title</h1><p>{PROSE}</p></main>'
            "</div></body></html>")
    assert classify_page(html, extracted_chars=len(PROSE)).type is PageType.CONTENT


def test_the_text_walk_stops_once_the_rules_are_decided_and_not_before() -> None:
    """The rules compare the visible text with 1,500 characters at most: a long page's walk stops
    past that (the text kept is its beginning), but a page whose long text is all menus is still
    read to its end, where its content shows it is navigation only."""
    import lxml.html

    from harvester.extract.classify import SHORT_TEXT, read_signals

    paragraph = "<p>" + "Plain words of the page body. " * 40 + "</p>"
    long_page = f"<html><body><main>{paragraph * 60}</main></body></html>"
    signals = read_signals(lxml.html.document_fromstring(long_page), long_page)
    assert SHORT_TEXT <= signals.text_chars < 4 * SHORT_TEXT < 60 * len(paragraph)
    assert signals.text.startswith("Plain words of the page body.") and not signals.short
    menu = "<ul>" + "<li><a href='/x'>A menu entry of the site</a></li>" * 200 + "</ul>"
    nav_only = f"<html><body><nav>{menu}</nav><p>Tiny.</p></body></html>"
    signals = read_signals(lxml.html.document_fromstring(nav_only), nav_only)
    assert signals.navigation_only and signals.content_chars == len("Tiny.")
    assert classify_page(nav_only, 200, extracted_chars=len(menu)).reason == "navigation_only"


def test_navigation_past_the_first_1500_characters_is_not_walked_but_content_is() -> None:
    """A docs theme's sidebar (the whole site's table of contents) often comes before the content:
    once the text has 1,500 characters, the rest of the menus adds nothing the rules need, so it
    is skipped, while the walk goes on to the content that decides "navigation only"."""
    import lxml.html

    from harvester.extract.classify import SHORT_TEXT, read_signals

    entries = [f"Chapter {n} of the site's table of contents" for n in range(200)]
    menu = "<ul>" + "".join(f"<li><a href='/c{n}'>{text}</a></li>" for n, text in enumerate(entries)) + "</ul>"
    html = (f"<html><body><nav>{menu}</nav><div class='sidebar'><p>Second sidebar's search tips</p></div>"
            f"<main><h1>Installation</h1>{PROSE}</main></body></html>")
    signals = read_signals(lxml.html.document_fromstring(html), html)
    assert SHORT_TEXT <= signals.text_chars < len(" ".join(entries)) / 2
    assert signals.text.startswith(entries[0]) and "Second sidebar" not in signals.text
    assert signals.content_chars >= 80 and not signals.navigation_only
    assert classify_page(html, extracted_chars=len(PROSE)).type is PageType.CONTENT
    # Whitespace between elements is no text: it never makes the walk stop early or late.
    spaced = html.replace("</li>", "</li>\n" + " " * 200)
    assert read_signals(lxml.html.document_fromstring(spaced), spaced).text == signals.text
