"""End to end: real crawls of sites no profile knows, and pages that are not what they say.

Learned templates (the extraction middleware holds a host's first pages until its template is
decided), URL words that decide nothing, navigation-only pages, a PDF served as HTML, binary
garbage, and stray bytes.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import requires
from tests.crawl import NO_EMBEDDING, crawl
from tests.servers import template_site
from tests.servers.pdfgen import make_pdf
from tests.servers.sites import DEDUP_ADMONITION, dedup_site
from tests.servers.sitesrv import Route, SiteServer
from tests.test_generated_sites import GENERATED, PAGES

pytestmark = pytest.mark.e2e

HTML = {"Content-Type": "text/html; charset=utf-8"}
CUSTOM_CHROME = ("Table of contents", "« previous", "next »", "Last update", "Built with a custom theme",
                 "maintained by")


def stats(output: str, prefix: str) -> dict[str, int]:
    """The crawl's stats whose name starts with ``prefix``, from Scrapy's closing stats dump."""
    return {m[1]: int(m[2]) for m in re.finditer(r"'(" + re.escape(prefix) + r"[^']*)': (\d+)", output)}


def by_path(items: list[dict], base: str) -> dict[str, dict]:
    return {item["url"][len(base) - 1:]: item for item in items}


# --------------------------------------------------------------------------
# Learned templates
# --------------------------------------------------------------------------

def test_a_custom_theme_site_is_stored_without_its_chrome(tmp_path: Path) -> None:
    # Four pages: fewer than the sample, so the template is decided when the crawl runs out of
    # pages and the waiting pages go through the pipelines then.
    with SiteServer(root=GENERATED / "site" / "sphinx-custom") as server:
        result = crawl("docs", server.url, tmp_path, settings=NO_EMBEDDING, timeout=180)
    assert result.returncode == 0, result.output[-3000:]
    pages = by_path(result.items, server.url)
    assert sorted(pages) == ["/", "/install.html", "/reference.html", "/usage.html"]
    for path, item in pages.items():
        leaks = [s for s in CUSTOM_CHROME if s in item["markdown"]]
        assert not leaks, f"{path}: {leaks}"
        assert item["chunks"]
    assert "```python\nfrom widget_toolkit import Widget, load" in pages["/usage.html"]["markdown"]
    host = server.url.split("//")[1].rstrip("/")
    assert result.report["template_removals"][host]["pages"] == 4
    assert result.report["template_removals"][host]["blocks"] >= 4 * 4
    assert "template:" in result.output and "(learned, removed)" in result.output


def test_learning_off_keeps_the_chrome(tmp_path: Path) -> None:
    with SiteServer(root=GENERATED / "site" / "sphinx-custom") as server:
        result = crawl("docs", server.url, tmp_path, settings={**NO_EMBEDDING, "HARVESTER_TEMPLATE_LEARNING": "0"},
                       timeout=180)
    assert result.returncode == 0, result.output[-3000:]
    assert len(result.items) == len(PAGES)
    assert all("Last update" in item["markdown"] for item in result.items)
    assert "template_removals" not in result.report


def test_a_site_profile_turns_learning_off_for_its_site_only(tmp_path: Path) -> None:
    # A profile that matches the site: its pages keep their chrome, as with the setting off.
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "no-learning.toml").write_text('template_learning = false\n[match]\ndomains = ["127.0.0.1"]\n')
    settings = {**NO_EMBEDDING, "HARVESTER_SITE_PROFILES_DIR": str(profiles)}
    with SiteServer(root=GENERATED / "site" / "sphinx-custom") as server:
        result = crawl("docs", server.url, tmp_path / "off", settings=settings, timeout=180)
    assert result.returncode == 0, result.output[-3000:]
    assert len(result.items) == len(PAGES)
    assert all("Last update" in item["markdown"] for item in result.items)
    assert "template_removals" not in result.report
    assert result.report["site_profiles"] == {server.url.split("//")[1].rstrip("/"): ["no-learning"]}
    # The same profile matching another host leaves this one learning.
    (profiles / "no-learning.toml").write_text('template_learning = false\n[match]\ndomains = ["docs.example.org"]\n')
    with SiteServer(root=GENERATED / "site" / "sphinx-custom") as server:
        result = crawl("docs", server.url, tmp_path / "on", settings=settings, timeout=180)
    assert result.returncode == 0, result.output[-3000:]
    assert not [item["url"] for item in result.items if "Last update" in item["markdown"]]
    assert result.report["template_removals"]


def test_a_site_larger_than_the_sample_is_clean_on_every_page(tmp_path: Path) -> None:
    with SiteServer(routes=template_site.routes()) as server:
        result = crawl("site", server.url, tmp_path, settings=NO_EMBEDDING, timeout=180)
    assert result.returncode == 0, result.output[-3000:]
    pages = by_path(result.items, server.url)
    assert sorted(pages) == sorted(template_site.pages())
    for path, item in pages.items():
        md = item["markdown"]
        assert not [s for s in template_site.CHROME if s in md], (path, md)
        assert "**Parameters:**" in md and "## See also" in md
    fence = "```python\n" + template_site.SHARED_CODE + "\n```"
    assert sorted(p for p, item in pages.items() if fence in item["markdown"]) == ["/docs/page2.html",
                                                                                  "/docs/page3.html"]
    assert stats(result.output, "harvester/template/learned_hosts") == {"harvester/template/learned_hosts": 1}


def test_a_page_too_long_to_learn_from_is_stored_clean_with_the_others(tmp_path: Path) -> None:
    # One page is a release-notes page over SAMPLE_MAX_BYTES. The sample is every page of the site,
    # so the template is still learning when it arrives, whenever that is: it waits for the
    # template the other pages decide (when the crawl runs out of pages), then goes through.
    from harvester.extract.template import SAMPLE_MAX_BYTES

    routes = template_site.routes()
    long_path = template_site.path(1)
    entry = "<p>" + "Fixed a widget that would not load when its board changed. " * 30 + "</p>\n"
    html = template_site.page(1).replace(
        "<h2>See also</h2>", entry * (SAMPLE_MAX_BYTES // len(entry) + 1) + "<h2>See also</h2>")
    routes[long_path] = Route(html, headers=HTML)
    with SiteServer(routes=routes) as server:
        result = crawl("site", server.url, tmp_path, timeout=180,
                       settings={**NO_EMBEDDING, "HARVESTER_TEMPLATE_SAMPLE": str(len(routes))})
    assert result.returncode == 0, result.output[-3000:]
    pages = by_path(result.items, server.url)
    assert sorted(pages) == sorted(template_site.pages())
    assert len(pages[long_path]["markdown"]) > SAMPLE_MAX_BYTES // 2
    for path, item in pages.items():
        assert not [s for s in template_site.CHROME if s in item["markdown"]], path
    assert stats(result.output, "harvester/template/learned_hosts") == {"harvester/template/learned_hosts": 1}
    # It waited without being learned from.
    assert stats(result.output, "harvester/template/too_long") == {"harvester/template/too_long_to_learn": 1}


def test_pages_waiting_for_a_template_are_stored_when_the_page_budget_ends_the_crawl(tmp_path: Path) -> None:
    with SiteServer(routes=template_site.routes()) as server:
        result = crawl("site", server.url, tmp_path, settings={**NO_EMBEDDING, "HARVESTER_MAX_PAGES": "3"},
                       timeout=180)
    assert result.returncode == 0, result.output[-3000:]
    assert result.report["finish_reason"] == "max_pages"
    assert len(result.items) == 3
    assert all("licensed under CC BY 4.0" not in item["markdown"] for item in result.items)


def test_a_recrawl_with_one_changed_page_learns_from_stored_pages(tmp_path: Path) -> None:
    # The second crawl gets 304 for three of the four pages: it fetches stored pages whole to learn
    # the template from, so the changed page is cleaned as it was the first time.
    root = tmp_path / "site"
    shutil.copytree(GENERATED / "site" / "sphinx-custom", root)
    with SiteServer(root=root, validators=True) as server:
        first = crawl("docs", server.url, tmp_path / "work", timeout=300)
        assert first.returncode == 0, first.output[-3000:]
        usage = root / "usage.html"
        usage.write_text(usage.read_text(encoding="utf-8").replace("A board groups widgets.",
                                                                    "A board groups widgets and gadgets."))
        second = crawl("docs", server.url, tmp_path / "work", timeout=300)
    assert second.returncode == 0, second.output[-3000:]
    assert second.report["recrawl"]["updated"] == 1 and second.report["recrawl"]["unchanged_304"] == 3
    # The feed says each page's status (issue 39): three short unchanged lines, one extracted page.
    assert sorted(i["change"] for i in second.items) == ["changed", "unchanged", "unchanged", "unchanged"]
    (item,) = [i for i in second.items if i["change"] == "changed"]
    assert item["url"].endswith("/usage.html") and "widgets and gadgets" in item["markdown"]
    assert not [s for s in CUSTOM_CHROME if s in item["markdown"]], item["markdown"]
    assert stats(second.output, "harvester/template/sampled_pages") == {"harvester/template/sampled_pages": 3}
    assert second.report["recrawl"]["pruned"] == 0


@pytest.mark.cli
def test_pages_waiting_for_the_template_when_a_job_pauses_are_fetched_again_on_resume(tmp_path: Path) -> None:
    # One page at a time from a slow server, paused (one SIGINT) after 4 pages: all of them wait
    # for the template (sample 8). Their requests are saved in JOBDIR and fetched again on resume,
    # so the two halves of the job store every page.
    import signal
    import subprocess
    import sys
    import time

    from tests.crawl import REPO, scrapy_env

    def slow(route: Route):
        def serve() -> Route:
            time.sleep(0.3)
            return route
        return serve

    jobdir = tmp_path / "job"
    routes = {path: slow(route) for path, route in template_site.routes().items()}

    def start(feed: str) -> subprocess.Popen:
        command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start={server.url}", "-O",
                   str(tmp_path / feed), "-s", f"JOBDIR={jobdir}", "-s", "CONCURRENT_REQUESTS=1",
                   "-s", "AUTOTHROTTLE_ENABLED=0", "-s", "HARVESTER_EMBEDDING_ENABLED=0",
                   "-s", "HARVESTER_INDEX_ENABLED=0"]
        return subprocess.Popen(command, cwd=REPO, env=scrapy_env(tmp_path), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)

    with SiteServer(routes=routes) as server:
        process = start("first.jsonl")
        while len([p for p in server.paths() if p.endswith((".html", "/"))]) < 4 and process.poll() is None:
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=120)
        assert (jobdir / "harvester-template-held.pickle").exists(), errors[-3000:]
        resumed = start("second.jsonl")
        _, errors = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, errors[-3000:]
    assert "Fetching again" in errors
    urls = set()
    for feed in ("first.jsonl", "second.jsonl"):
        path = tmp_path / feed
        if path.exists():
            urls |= {json.loads(line)["url"] for line in path.read_text().splitlines() if line.strip()}
    assert {url[len(server.url) - 1:] for url in urls} == set(template_site.pages())
    assert not (jobdir / "harvester-template-held.pickle").exists()


def test_a_notice_on_every_page_goes_with_the_template_before_the_pipelines(tmp_path: Path) -> None:
    # The dedup site repeats a warning on every page; chunk-level boilerplate detection would store
    # it once (tests/test_e2e_dedup.py, learning off). With learning on it never leaves extraction.
    with SiteServer(routes=dedup_site()) as server:
        result = crawl("docs", server.url + "docs/", tmp_path, settings=NO_EMBEDDING)
    assert result.returncode == 0, result.output[-3000:]
    assert len(result.items) >= 5
    assert not [item["url"] for item in result.items if DEDUP_ADMONITION in item["markdown"]]
    assert result.report["boilerplate_chunks"] == 0
    assert sum(n["pages"] for n in result.report["template_removals"].values()) >= 5


# --------------------------------------------------------------------------
# URL words decide nothing; the page does
# --------------------------------------------------------------------------

PROSE = ("This guide explains the feature step by step, with the settings it reads, the errors it "
         "raises and an example you can copy into your own project. ") * 4


def prose(title: str) -> str:
    """A page's own paragraphs (the same text on every page would be the site's template)."""
    return " ".join(f"{title} {word} {n}: a sentence about {title.lower()} and its {word} that no other "
                    "page repeats." for n, word in enumerate(("setup", "options", "errors", "examples")))


def doc(title: str, extra: str = "") -> Route:
    return Route(f"<!doctype html><html><head><title>{title} | Docs</title></head><body>"
                 '<nav class="menu"><a href="/">Docs</a> <form action="/search/"><input type="search" name="q">'
                 "</form></nav>"
                 f"<main><h1>{title}</h1><p>{prose(title)}</p>{extra}</main></body></html>", 200, HTML)


def url_site() -> dict[str, Route]:
    links = "".join(f'<li><a href="{p}">{p}</a></li>' for p in (
        "/auth/", "/search.html", "/accounts/", "/tags/", "/accounts/login/", "/find.html", "/search/?q=widgets"))
    return {
        "/": doc("Home", f"<ul>{links}</ul>"),
        "/auth/": doc("Authentication", "<p>Log in with a token: <code>client.login(token)</code>.</p>"),
        "/search.html": doc("Search", "<p>The search API ranks documents by BM25 and vectors.</p>"),
        "/accounts/": doc("Accounts", "<p>An account groups users and their API keys.</p>"),
        "/tags/": doc("Tags", "<p>Tags label documents; filter a search by tag.</p>"),
        # A real login page and a real search page: short, a form, and little else.
        "/accounts/login/": Route('<!doctype html><html><head><title>Sign in</title></head><body><main><h1>Sign in'
                                  '</h1><form method="post"><input name="user"><input type="password" name="pw">'
                                  "<button>Sign in</button></form></main></body></html>", 200, HTML),
        "/find.html": Route('<!doctype html><html><head><title>Search - Docs</title></head><body><main><h1>Search'
                            '</h1><form action="/find.html"><input type="text" name="q"><button>Go</button></form>'
                            "<p>Enter words to find pages that hold them all.</p><div id=results></div></main>"
                            "</body></html>", 200, HTML),
    }


def test_docs_about_auth_search_accounts_and_tags_are_crawled_and_forms_are_not(tmp_path: Path) -> None:
    with SiteServer(routes=url_site()) as server:
        result = crawl("site", server.url, tmp_path, settings=NO_EMBEDDING, timeout=180)
        requested = server.paths()
    assert result.returncode == 0, result.output[-3000:]
    stored = sorted(by_path(result.items, server.url))
    assert stored == ["/", "/accounts/", "/auth/", "/search.html", "/tags/"], stored
    skipped = result.report["skipped_by_reason"]
    assert skipped.get("login_wall") == 1 and skipped.get("search_page") == 1, skipped
    assert not [p for p in requested if "?q=" in p]  # a search result page by its query string


# --------------------------------------------------------------------------
# Pages that are not what they say
# --------------------------------------------------------------------------

NAV = ('<header class="topbar"><a href="/">Acme docs</a> <a href="/guide.html">Guide</a> '
       '<a href="/api.html">API</a> <a href="/blog.html">Blog</a></header>'
       '<div class="sidebar"><ul>' + "".join(
           f'<li><a href="/guide.html#s{i}">Guide section {i}: configuring the widget board</a></li>'
           for i in range(12)) + "</ul></div>")
def spa_page(title: str) -> Route:
    app = ("document.getElementById('app').innerHTML = "
           + json.dumps(f"<h1>{title}</h1><p>{prose(title)}</p><p>Only the browser shows this sentence.</p>") + ";")
    return Route(f'<!doctype html><html><head><title>{title}</title></head><body>{NAV}<main id="app"></main>'
                 f"<script>{app}</script></body></html>", 200, HTML)


def spa_site() -> dict[str, Route]:
    return {"/": spa_page("Home"), "/guide.html": spa_page("Guide")}


def test_a_navigation_only_page_is_empty_without_a_browser(tmp_path: Path) -> None:
    with SiteServer(routes=spa_site()) as server:
        result = crawl("site", server.url, tmp_path, settings={**NO_EMBEDDING, "HARVESTER_RENDER": "never"},
                       timeout=180)
    assert result.returncode == 0, result.output[-3000:]
    assert result.items == []
    assert result.report["skipped_by_reason"] == {"navigation_only": 2}, result.report["skipped_by_reason"]


@requires(shutil.which("chromium") is not None, reason="needs Debian's chromium (scripts/bootstrap.sh --test)")
def test_a_navigation_only_page_is_rendered_in_auto_mode(tmp_path: Path) -> None:
    with SiteServer(routes=spa_site()) as server:
        result = crawl("site", server.url, tmp_path, settings={
            **NO_EMBEDDING, "HARVESTER_RENDER": "auto", "HARVESTER_RENDER_TIMEOUT_MS": "20000",
            "HARVESTER_BROWSER_ARGS": json.dumps(["--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]),
        }, timeout=300)
    assert result.returncode == 0, result.output[-3000:]
    pages = by_path(result.items, server.url)
    assert "/guide.html" in pages, result.report
    assert "Only the browser shows this sentence." in pages["/guide.html"]["markdown"]
    assert pages["/guide.html"]["rendered"] is True
    assert stats(result.output, "harvester/render/fallback/app_shell")


def test_a_pdf_served_as_html_is_read_as_a_pdf_and_garbage_is_not_stored(tmp_path: Path) -> None:
    pdf = make_pdf([["Widget boards are described in this manual.", "Each board holds widgets in a grid,",
                     "and every widget keeps its options in the board file."]], title="Board manual")
    garbage = bytes(range(256)) * 64
    routes = {
        "/": doc("Home", '<a href="/manual">manual</a> <a href="/blob">blob</a>'),
        "/manual": Route(pdf, 200, {"Content-Type": "text/html; charset=utf-8"}),
        "/blob": Route(garbage, 200, {"Content-Type": "text/html"}),
    }
    with SiteServer(routes=routes) as server:
        result = crawl("site", server.url, tmp_path, settings=NO_EMBEDDING, timeout=180)
    assert result.returncode == 0, result.output[-3000:]
    pages = by_path(result.items, server.url)
    assert sorted(pages) == ["/", "/manual"]
    manual = pages["/manual"]
    assert manual["source_type"] == "pdf" and "Widget boards are described in this manual." in manual["markdown"]
    for item in result.items:
        assert not re.search(r"%PDF|endstream|\bobj\b|\ufffd", item["markdown"]), item["url"]
    assert result.report["skipped_by_reason"].get("not_html") == 1, result.report["skipped_by_reason"]


def test_stray_bytes_and_mixed_encodings_cost_no_page(tmp_path: Path) -> None:
    code = "def handler(signal):\n    \x0c\n    return signal\x1b[0m"
    body = ("<!doctype html><html><head><meta charset=utf-8><title>Signals</title></head><body><main>"
            "<h1>Signals \x00and handlers</h1><p>A handler runs when the signal arrives; \x01it must return "
            "quickly and never block the loop that delivers it.</p>"
            f"<pre><code>{code}</code></pre>"
            "<table><tr><th>Signal</th><th>Meaning&#1;</th></tr><tr><td>TERM\x02</td><td>stop</td></tr></table>"
            '<p title="x\x03y">Caf\u00e9 menus and na\u00efve handlers</p></main></body></html>').encode()
    # A Windows-1252 byte pasted into a UTF-8 page: "€" as 0x80.
    body = body.replace(b"</main>", b"<p>It costs 5 \x80 a month.</p></main>")
    routes = {"/": doc("Home", '<a href="/signals.html">signals</a>'),
              "/signals.html": Route(body, 200, {"Content-Type": "text/html; charset=utf-8"})}
    with SiteServer(routes=routes) as server:
        result = crawl("site", server.url, tmp_path, settings=NO_EMBEDDING, timeout=180)
    assert result.returncode == 0, result.output[-3000:]
    pages = by_path(result.items, server.url)
    md = pages["/signals.html"]["markdown"]
    assert "# Signals and handlers" in md
    assert "def handler(signal):" in md and "return signal[0m" in md
    assert "| TERM | stop |" in md
    assert "Café menus and naïve handlers" in md and "It costs 5 € a month." in md
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f]", md)
    assert pages["/signals.html"]["chunks"]
