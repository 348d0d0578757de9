"""End to end: JavaScript rendering with real headless Chromium (Debian's) in real crawls.

One crawl of a site where only some pages need JavaScript covers the app shell, the hash-routed
app, the page with an iframe, the blocked and login pages, and the browser's sub-requests to a
canary on 127.0.0.2 (which must see nothing). A second, small crawl with the real model and local
Qdrant covers learning (a host goes browser-direct) and what the index holds.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import qdrant_points, requires
from tests.crawl import NO_EMBEDDING, crawl
from tests.servers.sitesrv import Route, SiteServer

pytestmark = [
    pytest.mark.e2e,
    requires(shutil.which("chromium") is not None, reason="needs Debian's chromium (scripts/bootstrap.sh --test)"),
]

# Chromium asks DNS for its own services' names unless told not to; tests make no such lookup.
BROWSER = {
    "HARVESTER_BROWSER_ARGS": json.dumps(["--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]),
    "HARVESTER_RENDER_CONCURRENCY": "2",
    "HARVESTER_RENDER_TIMEOUT_MS": "20000",
}
HTML = {"Content-Type": "text/html; charset=utf-8"}
PROSE = ("Harvester keeps documentation searchable. This paragraph is long enough to be a page of "
         "its own, with a few sentences about configuration, deployment and the command line. ") * 3


def page(title: str, body: str, head: str = "") -> Route:
    return Route(f"<!doctype html><html><head><title>{title}</title>{head}</head><body>{body}</body></html>", 200, HTML)


def shell(title: str, script: str) -> Route:
    """An app shell: an empty mount element, a noscript line, the app in a script."""
    return page(title, '<div id="root"></div><noscript>You need to enable JavaScript to run this app.</noscript>'
                f"<script>{script}</script>")


def render_into_root(heading: str, text: str, links: str = "") -> str:
    return ("document.getElementById('root').innerHTML = "
            + json.dumps(f"<main><h1>{heading}</h1><p>{text}</p><p>{PROSE}</p>{links}</main>") + ";")


HASH_APP = """
const views = {{'#/': '<h1>Hash home</h1><p>Routed by the hash: the home view. {}</p>',
               '#/guide': '<h1>Hash guide</h1><p>The guide view.</p>'}};
function show() {{ document.getElementById('view').innerHTML = views[location.hash || '#/'] || ''; }}
window.addEventListener('hashchange', show); show();
""".format(PROSE.replace("'", ""))


def canary_site(canary: str) -> dict[str, Route]:
    # Every way a page makes the browser connect somewhere: fetch, an iframe, a script behind a
    # same-site redirect, a WebSocket, a popup.
    script = (render_into_root("Canary page", "Rendered while its sub-requests were refused.")
              + f"fetch('{canary}fetch').catch(() => null);"
              + f"try {{ new WebSocket('{canary.replace('http', 'ws')}ws'); }} catch (e) {{}}"
              + f"window.open('{canary}popup');")
    return {
        "/canary.html": page("Canary", '<div id="root"></div>'
                             f'<iframe src="{canary}frame"></iframe><img src="{canary}img.png">'
                             '<script src="/redirect-to-canary.js"></script>'
                             f"<script>{script}</script>"),
        "/redirect-to-canary.js": Route("", 302, {"Location": f"{canary}script.js"}),
    }


def mixed_site(canary: str) -> dict[str, Route]:
    links = "".join(f'<li><a href="/{name}">{name}</a></li>' for name in (
        "static.html", "static-js.html", "shell.html", "hash.html", "framed.html", "blocked.html",
        "login.html", "canary.html", "slow.html", "huge.html", "links.html", "busy.html"))
    return {
        "/": page("Home", f"<main><h1>Home</h1><p>{PROSE}</p><ul>{links}</ul></main>"),
        "/static.html": page("Static", f"<main><h1>Static page</h1><p>{PROSE}</p></main>"),
        "/static-js.html": page("Static with scripts", f"<main><h1>Static with scripts</h1><p>{PROSE}</p></main>"
                                "<script>window.analytics = 1;</script>"),
        "/shell.html": shell("Shell", render_into_root("Shell rendered", "Rendered by JavaScript in the browser.")),
        "/hash.html": page("Hash app", '<nav><a href="#/">Home</a> <a href="#/guide">Guide</a></nav>'
                           f'<div id="view"></div><script>{HASH_APP}</script>'),
        "/framed.html": page("Framed", f"<main><h1>Framed page</h1><p>{PROSE}</p>"
                             '<iframe src="/frame-inner.html"></iframe></main>'),
        "/frame-inner.html": page("Inner frame title", "<main><h1>Inner</h1><p>Text that lives only inside the "
                                  "same-site frame, read from the browser's frames.</p></main>"),
        "/blocked.html": page("Just a moment...", "<div>Checking if the site connection is secure</div>"
                              '<script src="/cdn-cgi/challenge-platform/h/b/orchestrate/jsch/v1"></script>'),
        "/login.html": page("Sign in", '<form><input name="user"><input type="password" name="pw">'
                            "<button>Sign in</button></form>"),
        **canary_site(canary),
        # Its script arrives in 16-byte pieces for longer than the page timeout: the render fails.
        "/slow.html": page("Slow", '<div id="root"></div><script src="/slow.js"></script>'),
        "/slow.js": Route("/* " + "x" * 300 + " */", 200, {"Content-Type": "application/javascript"}, drip=0.5),
        # Low quality over HTTP (mostly links), so the browser is tried; its render fails.
        "/links.html": page("Links", "<main><h1>Link list</h1><p>Where to read on about the tool.</p><ul>"
                            + "".join(f'<li><a href="/static.html">The static page about configuration, part {n}</a></li>'
                                      for n in range(8))
                            + '</ul></main><script src="/slow.js"></script>'),
        # Its script never yields once the page loaded: only the render budget ends it.
        "/busy.html": shell("Busy", "window.addEventListener('load', () => setTimeout(() => { for (;;) {} }, 0));"),
        # Small over HTTP, over DOWNLOAD_MAXSIZE once its script ran.
        "/huge.html": shell("Huge", "document.getElementById('root').textContent = 'word '.repeat(60000);"),
    }


def servers() -> tuple[SiteServer, SiteServer]:
    canary = SiteServer(routes={}, host="127.0.0.2", dynamic=lambda path: Route("canary", 200))
    site = SiteServer(routes={})
    return site, canary


def stats(output: str, prefix: str) -> dict[str, int]:
    """The crawl's stats whose name starts with ``prefix``, from Scrapy's closing stats dump."""
    return {m[1]: int(m[2]) for m in re.finditer(r"'(" + re.escape(prefix) + r"[^']*)': (\d+)", output)}


def hits(server: SiteServer) -> Counter[str]:
    return Counter(server.paths())


@pytest.fixture(scope="module")
def mixed_crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Counter[str], list[str]]:
    workdir = tmp_path_factory.mktemp("render")
    site, canary = servers()
    with canary, site:
        site.routes.update(mixed_site(canary.url))
        result = crawl("docs", site.url, workdir, settings={
            **NO_EMBEDDING, **BROWSER, "HARVESTER_RENDER_LEARN_AFTER": "0", "HARVESTER_PROCESS_IFRAMES": "1",
            "HARVESTER_RENDER_TIMEOUT_MS": "4000", "DOWNLOAD_MAXSIZE": "200000",
        }, timeout=300)
    return result, hits(site), canary.paths()


def by_path(result: Any) -> dict[str, dict[str, Any]]:
    return {"/" + item["url"].split("/", 3)[3]: item for item in result.items}


def test_auto_renders_exactly_the_pages_that_need_javascript(mixed_crawl) -> None:
    result, served, _ = mixed_crawl
    assert result.returncode == 0, result.output[-3000:]
    items = by_path(result)
    rendered = {path for path, item in items.items() if item["rendered"]}
    assert rendered == {"/shell.html", "/hash.html", "/framed.html", "/canary.html"}, result.output[-3000:]
    # Fetched over HTTP and once more by the browser; the others once.
    assert [served[p] for p in ("/shell.html", "/hash.html", "/framed.html")] == [2, 2, 2]
    assert [served[p] for p in ("/", "/static.html", "/static-js.html", "/blocked.html", "/login.html")] == [1] * 5
    fallback = stats(result.output, "harvester/render/fallback/")
    assert fallback["harvester/render/fallback/app_shell"] >= 2
    assert fallback["harvester/render/fallback/iframes"] == 1
    assert items["/static-js.html"]["page_type"] == "content"


def test_app_shell_and_hash_routed_app_get_their_rendered_content(mixed_crawl) -> None:
    items = by_path(mixed_crawl[0])
    assert "Rendered by JavaScript in the browser." in items["/shell.html"]["markdown"]
    assert items["/shell.html"]["title"] == "Shell"
    assert "Routed by the hash: the home view." in items["/hash.html"]["markdown"]


def test_same_site_iframe_content_is_extracted_under_its_title_and_url(mixed_crawl) -> None:
    result, _served, _ = mixed_crawl
    markdown = by_path(result)["/framed.html"]["markdown"]
    assert "## Inner frame title" in markdown
    assert "frame-inner.html" in markdown
    assert "read from the browser's frames" in markdown
    assert "/frame-inner.html" not in by_path(result)  # not a page of its own (no link to it)


def test_blocked_and_login_pages_are_classified_and_kept_out(mixed_crawl) -> None:
    result, _, _ = mixed_crawl
    items = by_path(result)
    assert "/blocked.html" not in items and "/login.html" not in items
    types = stats(result.output, "harvester/pages/type/")
    assert types["harvester/pages/type/blocked"] == 1 and types["harvester/pages/type/login_wall"] == 1
    assert types["harvester/pages/type/content"] >= 5
    skipped = result.report["skipped"]  # the run report lists them
    assert [u.rsplit("/", 1)[1] for u in skipped["blocked"]] == ["blocked.html"]
    assert [u.rsplit("/", 1)[1] for u in skipped["login_wall"]] == ["login.html"]


def test_browser_sub_requests_to_a_loopback_canary_are_refused(mixed_crawl) -> None:
    result, served, canary_hits = mixed_crawl
    assert canary_hits == [], canary_hits
    assert "Canary page" in by_path(result)["/canary.html"]["markdown"]
    assert served["/redirect-to-canary.js"] == 1  # the browser asked; the hop to the canary was refused
    assert stats(result.output, "harvester/render/popups_closed") == {"harvester/render/popups_closed": 1}
    refused = stats(result.output, "harvester/render/proxy/refused")
    assert sum(refused.values()) >= 3, refused


def chain_site() -> dict[str, Route]:
    """Each shell's link to the next exists only once its script ran, so the pages are found one
    after another: chain-1 and chain-2 teach the host to need the browser (learn after 2)."""
    def link(path: str) -> str:
        return f'<p><a href="/{path}">next: {path}</a></p>'

    return {
        "/": page("Chain start", f"<main><h1>Chain start</h1><p>{PROSE}</p>{link('chain-1.html')}</main>"),
        "/chain-1.html": shell("Chain 1", render_into_root("Chain one", "The first shell, rendered: apricot.",
                                                           link("chain-2.html"))),
        "/chain-2.html": shell("Chain 2", render_into_root("Chain two", "The second shell, rendered: blueberry.",
                                                           link("chain-3.html"))),
        "/chain-3.html": shell("Chain 3", render_into_root("Chain three", "The third shell, rendered: cherry.",
                                                           link("after.html"))),
        "/after.html": page("After", f"<main><h1>After the chain</h1><p>Plain HTML: damson. {PROSE}</p></main>"),
    }


def test_a_host_that_needs_the_browser_goes_browser_direct_and_rendered_pages_are_indexed(tmp_path: Path) -> None:
    """Learning, the real model and local Qdrant, then a re-crawl: rendered pages were stored with
    their validators and links, so the re-crawl asks over HTTP, gets 304s, renders nothing,
    follows the stored links and prunes nothing."""
    routes = chain_site()
    for n, route in enumerate(routes.values()):
        route.headers["ETag"] = f'"v{n}"'
    settings = {**BROWSER, "HARVESTER_RENDER_LEARN_AFTER": "2"}
    with SiteServer(routes=routes) as site:
        result = crawl("docs", site.url, tmp_path, settings=settings)
        served = hits(site)
        points = qdrant_points(tmp_path / "qdrant")
        again = crawl("docs", site.url, tmp_path, settings=settings)
    assert result.returncode == 0, result.output[-3000:]
    assert [served[f"/chain-{n}.html"] for n in (1, 2, 3)] == [2, 2, 1]  # HTTP + browser, then browser only
    assert served["/after.html"] == 1
    items = by_path(result)
    assert {p for p, item in items.items() if item["rendered"]} == {
        "/chain-1.html", "/chain-2.html", "/chain-3.html", "/after.html"}
    render = stats(result.output, "harvester/render/")
    assert render["harvester/render/fallback"] == 2
    assert render["harvester/render/learned_hosts"] == 1
    assert render["harvester/render/learned_direct"] == 2
    texts: dict[str, str] = {}
    for point in points:
        name = point.payload["metadata"]["source_url"].rsplit("/", 1)[1]
        texts[name] = texts.get(name, "") + point.payload["page_content"]
    assert "apricot" in texts["chain-1.html"] and "cherry" in texts["chain-3.html"] and "damson" in texts["after.html"]
    assert len(points) == len([c for item in result.items for c in item["chunks"]])

    assert again.returncode == 0, again.output[-3000:]
    assert again.report["recrawl"]["unchanged_304"] == 5, again.report["recrawl"]
    assert again.report["recrawl"]["pruned"] == 0
    assert "harvester/render/fallback" not in again.output and "playwright/page_count" not in again.output
    assert len(qdrant_points(tmp_path / "qdrant")) == len(points)


def sphinx_page(title: str, body: str) -> Route:
    """A page as Sphinx's basic theme writes it, with its scripts."""
    return page(title, f'<div class="document"><div class="documentwrapper"><div class="bodywrapper">'
                       f'<div class="body" role="main"><section><h1>{title}</h1>{body}</section></div></div></div></div>',
                head='<meta name="generator" content="Sphinx 7.2.6">'
                     '<script src="_static/doctools.js"></script><script src="_static/searchtools.js"></script>')


def test_a_static_generators_low_quality_page_is_never_rendered(tmp_path: Path) -> None:
    """A Sphinx table of contents scores low (it is links), yet all it shows is in its HTML."""
    links = "".join(f'<li><a href="/guide.html#part-{n}">The guide to configuration, part {n}</a></li>' for n in range(12))
    routes = {
        "/": sphinx_page("Contents", f"<p>Read on.</p><ul>{links}</ul>"),
        "/guide.html": sphinx_page("Guide", f"<p>{PROSE}</p>"),
    }
    with SiteServer(routes=routes) as site:
        result = crawl("site", site.url, tmp_path, settings={**NO_EMBEDDING, **BROWSER})
        served = hits(site)
    assert result.returncode == 0, result.output[-3000:]
    assert result.report["low_quality"] and list(result.report["low_quality"]) == [site.url]
    assert served["/"] == 1 and served["/guide.html"] == 1
    assert "harvester/render/fallback" not in result.output and "playwright/" not in result.output
    assert stats(result.output, "harvester/pages/generator/")["harvester/pages/generator/sphinx"] == 2


def django_stub_page(title: str, line: str, sidebar: str) -> Route:
    """A stub page as the Django docs' Sphinx theme writes it (``topics/http/generic-views.html``:
    a heading and one line between a header bar, a sidebar and a footer bar), recognised as
    Sphinx by its scripts alone (no generator tag), its main element one no profile names."""
    bar = '<div class="nav">&laquo; <a href="/">previous</a> | <a href="/">up</a> | <a href="/guide.html">next</a> &raquo;</div>'
    body = ('<div class="document"><div id="custom-doc" class="yui-t6"><div id="hd">'
            '<h1><a href="/">Harvester 1.0 documentation</a></h1>'
            '<div id="global-nav"><a href="/">Home</a> | <a href="/guide.html">Table of contents</a> | '
            f'<a href="/guide.html">Index</a> | <a href="/guide.html">Modules</a></div>{bar}</div>'
            '<div id="bd"><div id="yui-main"><div class="yui-b"><div class="yui-g">'
            f'<div class="section"><h1>{title}</h1><p>{line}</p></div></div></div></div>'
            f'<div class="yui-b" id="sidebar"><div class="sphinxsidebar" role="navigation"><ul>{sidebar}</ul></div>'
            f'<h3>Last update:</h3><p class="topless">Nov 11, 2026</p></div></div><div id="ft">{bar}</div></div></div>')
    head = ('<script data-url_root="./" id="documentation_options" src="_static/documentation_options.js"></script>'
            '<script src="_static/jquery.js"></script><script src="_static/doctools.js"></script>'
            '<script src="_static/sphinx_highlight.js"></script>')
    return page(title, body, head=head)


def test_a_static_generators_stub_pages_are_never_rendered(tmp_path: Path) -> None:
    """Sphinx stub pages read as app shells to the classifier (one's text is nearly all navigation,
    the other's too short to keep), yet all they show is in their HTML: both are skipped without a
    browser."""
    sidebar = "".join(f'<li><a href="/guide.html#part-{n}">The guide to configuration, part {n}</a></li>'
                      for n in range(12))
    routes = {
        "/": sphinx_page("Contents", f'<p>{PROSE}</p><ul><li><a href="/views.html">Generic views</a></li>'
                                     '<li><a href="/short.html">Shortcuts</a></li><li><a href="/guide.html">Guide</a></li></ul>'),
        "/views.html": django_stub_page("Generic views", 'See <a href="/guide.html">the guide</a>.', sidebar),
        "/short.html": sphinx_page("Shortcuts", '<p>See <a href="/guide.html">the guide</a>.</p>'),
        "/guide.html": sphinx_page("Guide", f"<p>{PROSE}</p>"),
    }
    with SiteServer(routes=routes) as site:
        result = crawl("site", site.url, tmp_path, settings={**NO_EMBEDDING, **BROWSER})
        served = hits(site)
    assert result.returncode == 0, result.output[-3000:]
    assert served["/views.html"] == served["/short.html"] == 1
    assert "harvester/render/fallback" not in result.output and "playwright/" not in result.output
    assert stats(result.output, "harvester/pages/type/")["harvester/pages/type/app_shell"] == 2
    assert set(by_path(result)) == {"/", "/guide.html"}
    skipped = result.report["skipped_by_reason"]
    assert skipped.get("navigation_only") == 1 and skipped.get("too_short") == 1, skipped


def test_auto_without_a_browser_warns_once_and_keeps_the_http_result(tmp_path: Path) -> None:
    routes = {
        "/": page("Home", f'<main><h1>Home</h1><p>{PROSE}</p><a href="/a.html">a</a> <a href="/b.html">b</a></main>'),
        "/a.html": shell("A", render_into_root("A", "a")),
        "/b.html": shell("B", render_into_root("B", "b")),
    }
    with SiteServer(routes=routes) as site:
        result = crawl("docs", site.url, tmp_path, settings={
            **NO_EMBEDDING, "HARVESTER_BROWSER_PATH": str(tmp_path / "no-chromium")})
        served = hits(site)
    assert result.returncode == 0, result.output[-3000:]
    assert served["/a.html"] == served["/b.html"] == 1
    assert [item["url"] for item in result.items] == [site.url]
    warnings = [line for line in result.output.splitlines() if "needs JavaScript rendering" in line]
    assert len(warnings) == 1 and "playwright install chromium" in warnings[0] and "HARVESTER_BROWSER_PATH" in warnings[0]
    assert stats(result.output, "harvester/render/unavailable") == {"harvester/render/unavailable": 2}
    assert "playwright/" not in result.output  # no browser, no Playwright started


def test_a_page_the_browser_failed_on_keeps_its_http_result(mixed_crawl) -> None:
    result, served, _ = mixed_crawl
    item = by_path(result)["/links.html"]
    assert served["/links.html"] == 2 and not item["rendered"] and item["page_type"] == "content"
    assert stats(result.output, "harvester/render/fallback/")["harvester/render/fallback/low_quality"] == 1


def test_failed_and_oversized_renders_close_their_pages(mixed_crawl) -> None:
    result, _served, _ = mixed_crawl
    items = by_path(result)
    assert "/slow.html" not in items and "/huge.html" not in items and "/busy.html" not in items
    render = stats(result.output, "harvester/render/")
    assert render["harvester/render/too_large"] == 1
    assert render["harvester/render/over_budget"] == 1
    assert render["harvester/render/failed"] == 4  # the slow pages, the busy one and the huge one
    pages = stats(result.output, "playwright/page_count")
    assert pages["playwright/page_count"] == 8
    # scrapy-playwright closes pages after success and on errors; the busy page's render was
    # cancelled, which it does not see: the handler closed that one.
    assert pages["playwright/page_count/closed"] == 7
    assert render["harvester/render/pages_closed_by_harvester"] == 1
    assert "Closing browser" in result.output



def test_in_proxy_mode_the_browser_goes_through_the_guard_proxy_to_the_upstream(tmp_path: Path) -> None:
    from tests.servers.proxysrv import ProxyServer

    routes = {
        "/": page("Home", f'<main><h1>Home</h1><p>{PROSE}</p><a href="/shell.html">shell</a></main>'),
        "/shell.html": shell("Shell", render_into_root("Shell behind a proxy", "Rendered through the upstream proxy.")),
    }
    with SiteServer(routes=routes) as site, ProxyServer("socks5", tmp_path, host="127.0.0.3") as proxy:
        result = crawl("docs", site.url, tmp_path / "crawl", settings={
            **NO_EMBEDDING, **BROWSER, "HARVESTER_PROXY": proxy.url, "HARVESTER_PROXY_MODE": "proxy",
            "HARVESTER_ALLOWED_HOSTS": f"127.0.0.1:{site.port}"})
        served = hits(site)
    assert result.returncode == 0, result.output[-3000:]
    assert served["/shell.html"] == 2
    assert "Rendered through the upstream proxy." in by_path(result)["/shell.html"]["markdown"]
    relayed = re.findall(r"socks5 \S+ -> (\S+)", proxy.log())
    assert set(relayed) == {f"127.0.0.1:{site.port}"}, proxy.log()
    assert stats(result.output, "harvester/render/proxy/upstream")["harvester/render/proxy/upstream"] >= 1
