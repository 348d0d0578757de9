"""End to end: the SSRF guard in real crawls, against a canary server on 127.0.0.2 that must never
receive a request. The test sites are on 127.0.0.1, which tests/crawl.py allows (and only it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.crawl import NO_EMBEDDING, REPO, crawl, scrapy_env
from tests.servers.sites import doc_page
from tests.servers.sitesrv import Route, SiteServer

pytestmark = pytest.mark.e2e

CANARY_SPELLINGS = {
    "dotted": "127.0.0.2", "decimal": "2130706434", "hex": "0x7f.0.0.2", "octal": "0177.0.0.2",
    "short": "127.2", "mapped": "[::ffff:127.0.0.2]", "name": "canary.test",
}
# canary.test is the canary; mixed.test has the canary's address and the site's, in that order.
STUB_HOSTS = {"canary.test": ["127.0.0.2"], "mixed.test": ["127.0.0.2", "127.0.0.1"],
              "xn--bcher-kva.test": ["127.0.0.1"], "xn--ber-goa.test": ["127.0.0.2"]}
# Scrapy's OffsiteMiddleware would drop redirects to another host; without it the guard alone
# stands between a redirect and the canary.
NO_OFFSITE = '{"scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": null}'


def stub_settings(**extra: str) -> dict[str, str]:
    return {"TWISTED_DNS_RESOLVER": "tests.servers.stubdns.StubGuardedResolver", **NO_EMBEDDING, **extra}


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[SiteServer, SiteServer]]:
    """The site on 127.0.0.1:P and the canary on 127.0.0.2:P (the same port, so that only the
    address tells them apart)."""
    monkeypatch.setenv("HARVESTER_TEST_HOSTS", json.dumps(STUB_HOSTS))
    canary = SiteServer(routes={}, host="127.0.0.2")
    try:
        site = SiteServer(routes={}, port=canary.port)
    except OSError:
        pytest.skip("no common free port on 127.0.0.1 and 127.0.0.2")
    with canary, site:
        site.routes.update(hostile_links_site(site.port))
        yield site, canary


def hostile_links_site(port: int) -> dict[str, Route]:
    """/docs/ links to pages that redirect to every spelling of the canary, a meta refresh to it,
    a redirect to mixed.test, and direct links to the canary; the sitemap lists the canary too."""
    targets = {name: f"http://{host}:{port}/secret" for name, host in CANARY_SPELLINGS.items()}
    hops = [f"/docs/go-{name}.html" for name in targets]
    links = "".join(f'<p><a href="{url}">{name}</a></p>' for name, url in targets.items())
    routes = {
        "/robots.txt": Route(f"User-agent: *\nDisallow:\nSitemap: http://127.0.0.1:{port}/sitemap.xml\n",
                             headers={"Content-Type": "text/plain"}),
        "/docs/": Route(doc_page("index", sidebar=[*hops, "/docs/refresh.html", "/docs/mixed.html"],
                                 extra_body=links)),
        "/docs/refresh.html": Route(
            f'<html><head><meta http-equiv="refresh" content="0; url=http://2130706434:{port}/from-refresh"></head>'
            "<body>moved</body></html>"),
        "/docs/mixed.html": Route(b"", 302, {"Location": f"http://mixed.test:{port}/docs/landing.html"}),
        "/docs/landing.html": Route(doc_page("landing")),
        "/sitemap.xml": Route(
            '<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(f"<url><loc>{url}</loc></url>" for url in targets.values())
            + f"<url><loc>http://127.0.0.1:{port}/docs/go-decimal.html</loc></url>"
            + f"<url><loc>http://127.0.0.1:{port}/docs/landing.html</loc></url></urlset>",
            headers={"Content-Type": "application/xml"}),
    }
    for name, hop in zip(targets, hops):
        routes[hop] = Route(b"", 302, {"Location": targets[name]})
    return routes


def test_no_redirect_refresh_link_or_sitemap_entry_reaches_the_canary(
        servers: tuple[SiteServer, SiteServer], tmp_path: Path) -> None:
    site, canary = servers
    result = crawl("docs", site.url + "docs/", tmp_path / "docs",
                   settings=stub_settings(DOWNLOADER_MIDDLEWARES=NO_OFFSITE))
    assert result.returncode == 0, result.output[-3000:]
    sitemap = crawl("sitemap", site.url + "docs/", tmp_path / "sitemap",
                    settings=stub_settings(DOWNLOADER_MIDDLEWARES=NO_OFFSITE))
    assert canary.paths() == []
    # Every redirect hop was requested, and each was refused at its target.
    for name in CANARY_SPELLINGS:
        assert f"/docs/go-{name}.html" in site.paths()
    assert "/docs/refresh.html" in site.paths()
    # mixed.test: the canary's address was dropped, the connection went to the site's.
    assert "/docs/landing.html" in site.paths()
    assert any(item["url"].endswith("/docs/landing.html") for item in result.items)
    refused = result.report["refused_hosts"]
    assert refused["canary.test"] == "loopback"
    # Requests carry every IPv4 spelling in dotted form (w3lib's safe_url_string, from 2.6): the
    # spellings reach the guard as 127.0.0.2, which test_guard.py's url_refusal cases check raw.
    assert set(refused) == {"canary.test", "127.0.0.2", "::ffff:127.0.0.2"}
    assert "mixed.test" not in refused
    # Each distinct target once: the four IPv4 spellings are one URL by then.
    port = site.port
    assert sorted(result.report["skipped"]["ssrf_refused"]) == sorted([
        f"http://127.0.0.2:{port}/secret", f"http://[::ffff:127.0.0.2]:{port}/secret",
        f"http://canary.test:{port}/secret", f"http://127.0.0.2:{port}/from-refresh"])
    assert "Refused to connect to canary.test at 127.0.0.2 (loopback)" in result.output
    assert sitemap.returncode == 0, sitemap.output[-3000:]
    assert sitemap.report["skipped"]["ssrf_refused"] == [f"http://127.0.0.2:{site.port}/secret"]


@pytest.mark.parametrize("host", ["canary.test", "0x7f.0.0.2"])
def test_a_start_url_on_the_canary_is_refused(servers: tuple[SiteServer, SiteServer], tmp_path: Path,
                                              host: str) -> None:
    site, canary = servers
    result = crawl("docs", f"http://{host}:{site.port}/docs/", tmp_path, settings=stub_settings())
    assert result.returncode == 1
    assert "ssrf_refused" in result.output
    assert canary.paths() == []


def test_a_start_url_with_an_international_host_is_crawled(servers: tuple[SiteServer, SiteServer],
                                                           tmp_path: Path) -> None:
    """The request carries the host's IDNA form (bücher.test is xn--bcher-kva.test): the crawl's
    scope and allowed_domains must too, or OffsiteMiddleware drops the start request."""
    site, canary = servers
    result = crawl("docs", f"http://bücher.test:{site.port}/docs/", tmp_path, settings=stub_settings())
    assert result.returncode == 0, result.output[-3000:]
    assert [item["url"] for item in result.items][:1] == [f"http://xn--bcher-kva.test:{site.port}/docs/"]
    assert canary.paths() == []


def test_an_allow_listed_international_name_is_reached(servers: tuple[SiteServer, SiteServer],
                                                        tmp_path: Path) -> None:
    """über.test (xn--ber-goa.test) resolves to the canary's loopback address: allow-listed by its
    name as a user types it, it is crawled."""
    site, canary = servers
    canary.routes.update({"/docs/": Route(doc_page("inside"))})
    result = crawl("docs", f"http://über.test:{site.port}/docs/", tmp_path, settings=stub_settings(
        HARVESTER_ALLOWED_HOSTS="127.0.0.1,über.test"))
    assert result.returncode == 0, result.output[-3000:]
    assert set(canary.paths()) == {"/robots.txt", "/docs/"}
    assert [item["url"] for item in result.items] == [f"http://xn--ber-goa.test:{site.port}/docs/"]


def test_the_canary_test_can_fail(servers: tuple[SiteServer, SiteServer], tmp_path: Path) -> None:
    """With the guard off, the same site does reach the canary: the tests above are not vacuous."""
    site, canary = servers
    crawl("docs", site.url + "docs/", tmp_path, settings=stub_settings(
        DOWNLOADER_MIDDLEWARES=NO_OFFSITE, HARVESTER_SSRF_GUARD_ENABLED="0"))
    assert "/secret" in canary.paths()


def listening_inodes() -> set[str]:
    """Socket inodes in the LISTEN state (0A), from /proc/net/tcp and tcp6."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":
                inodes.add(fields[9])
    return inodes


def socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


@pytest.mark.cli
def test_a_crawl_opens_no_listening_port(tmp_path: Path) -> None:
    """Telnet console and remote control are off: while a crawl runs, it listens on nothing."""
    if not Path("/proc/net/tcp").exists():
        pytest.skip("needs Linux /proc")

    serving = threading.Event()

    def slow_page() -> Route:
        serving.set()
        time.sleep(4)
        return Route(doc_page("slow"))

    routes = {"/": Route(doc_page("home", sidebar=["/slow.html"])), "/slow.html": slow_page}
    with SiteServer(routes=routes) as site:
        command = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"start={site.url}",
                   *(arg for name, value in NO_EMBEDDING.items() for arg in ("-s", f"{name}={value}"))]
        process = subprocess.Popen(command, cwd=REPO, env=scrapy_env(tmp_path), text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert serving.wait(120), "the crawl never requested the slow page"
        listening: set[str] = set()
        sockets_seen: set[str] = set()
        for _ in range(10):  # while the slow page is being served, the crawl is mid-run
            sockets = socket_inodes(process.pid)
            sockets_seen |= sockets
            listening |= sockets & listening_inodes()
            time.sleep(0.2)
        output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output[-2000:]
    assert sockets_seen, "the crawl was not observed while running"
    assert listening == set()
    assert "Telnet console listening" not in output
    assert "scrapy.extensions.telnet.TelnetConsole" not in output
    assert "scrapy.extensions.remote_control.RemoteControl" not in output
