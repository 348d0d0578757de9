"""End to end: HARVESTER_PROXY_MODE in real crawls through real proxies on loopback.

proxy.py (HTTP) and pproxy (SOCKS5) listen on 127.0.0.3, which is not allow-listed: the proxy a
user configures is trusted. The site on 127.0.0.1 tells a proxied request by the ``Via`` header
proxy.py adds; the canary on 127.0.0.2 (and ``canary.test``, a stub name for it) must never be
requested, by Harvester or by the proxy.
"""

from __future__ import annotations

import json
import re
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.crawl import NO_EMBEDDING, CrawlResult, crawl
from tests.servers.proxysrv import ProxyServer, self_signed
from tests.servers.sites import doc_page
from tests.servers.sitesrv import RESET, Route, SiteServer

pytestmark = pytest.mark.e2e

PROXY_HOST = "127.0.0.3"
PAGES = ["/docs/a.html", "/docs/b.html"]
# Answered so directly, and 200 through the proxy.
SLOW = -1  # a FAILING_DIRECTLY status: the answer dribbles in past DOWNLOAD_TIMEOUT
FAILING_DIRECTLY = {"/docs/blocked.html": 403, "/docs/limited.html": 429, "/docs/busy.html": 503,
                    "/docs/reset.html": RESET, "/docs/slow.html": SLOW}
CANARY_HOPS = ["/docs/go-canary.html", "/docs/go-name.html"]


class ViaSiteServer(SiteServer):
    """A SiteServer that records whether each request came through proxy.py (its ``Via``
    header on the connection) and answers FAILING_DIRECTLY's paths with their failure unless it did."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.via: list[tuple[str, bool]] = []
        self._request = threading.local()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        base = super()._handler()
        server = self

        class Handler(base):  # type: ignore[valid-type,misc]
            def do_GET(self) -> None:
                # proxy.py adds Via to the first request of a kept-alive connection only and
                # relays the rest as they come: the whole connection is the proxy's.
                self.proxied = getattr(self, "proxied", False) or "proxy.py" in self.headers.get("Via", "")
                proxied = self.proxied
                server._request.proxied = proxied
                with server._lock:
                    server.via.append((self.path, proxied))
                super().do_GET()

        return Handler

    def resolve(self, path: str, full_path: str | None = None) -> Route:
        if path in FAILING_DIRECTLY and not getattr(self._request, "proxied", False):
            status = FAILING_DIRECTLY[path]
            if status == SLOW:
                return Route("<html><body>" + "slow " * 100 + "</body></html>", drip=0.5)
            return Route("<html><body><h1>Access denied</h1></body></html>", status, {"Retry-After": "1"})
        return super().resolve(path, full_path)

    def direct_paths(self) -> list[str]:
        return [path for path, proxied in self.via if not proxied]

    def proxied_paths(self) -> list[str]:
        return [path for path, proxied in self.via if proxied]


def proxy_site(port: int, failing: bool) -> dict[str, Route]:
    pages = PAGES + (list(FAILING_DIRECTLY) if failing else []) + CANARY_HOPS
    routes = {
        "/robots.txt": Route("User-agent: *\nDisallow:\n", headers={"Content-Type": "text/plain"}),
        "/docs/": Route(doc_page("index", sidebar=pages)),
        "/docs/go-canary.html": Route(b"", 302, {"Location": f"http://127.0.0.2:{port}/secret"}),
        "/docs/go-name.html": Route(b"", 302, {"Location": f"http://canary.test:{port}/secret"}),
    }
    for path in PAGES + list(FAILING_DIRECTLY):
        routes[path] = Route(doc_page(path.rsplit("/", 1)[1].removesuffix(".html")))
    return routes


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ViaSiteServer, SiteServer]]:
    """The site on 127.0.0.1:P and the canary on 127.0.0.2:P (only the address tells them apart)."""
    monkeypatch.setenv("HARVESTER_TEST_HOSTS", json.dumps({"canary.test": ["127.0.0.2"]}))
    canary = SiteServer(routes={}, host="127.0.0.2")
    try:
        site = ViaSiteServer(routes={}, port=canary.port)
    except OSError:
        pytest.skip("no common free port on 127.0.0.1 and 127.0.0.2")
    with canary, site:
        yield site, canary


def proxy_crawl(site: SiteServer, workdir: Path, **settings: str) -> CrawlResult:
    return crawl("docs", site.url + "docs/", workdir, settings={
        "TWISTED_DNS_RESOLVER": "tests.servers.stubdns.StubGuardedResolver",
        # The site's port only: the proxies, and the local GuardProxy of the socks5 mode, are
        # trusted as the configured proxy, not by this list.
        "HARVESTER_ALLOWED_HOSTS": f"127.0.0.1:{site.port}",
        # Without OffsiteMiddleware only the SSRF guard stands between a redirect and the canary.
        "DOWNLOADER_MIDDLEWARES": '{"scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": null}',
        **NO_EMBEDDING, **settings,
    })


def stats(result: CrawlResult, prefix: str = "harvester/proxy/") -> dict[str, int]:
    """The integer stats under ``prefix`` from Scrapy's stats dump at the end of the log."""
    return {key: int(value) for key, value in re.findall(rf"'({re.escape(prefix)}[^']*)': (\d+)", result.output)}


def stored_paths(result: CrawlResult) -> set[str]:
    return {"/" + item["url"].split("/", 3)[3] for item in result.items}


def assert_canary_untouched(result: CrawlResult, canary: SiteServer, proxy: ProxyServer | None) -> None:
    assert canary.paths() == []
    assert set(result.report["refused_hosts"]) == {"127.0.0.2", "canary.test"}
    if proxy is not None:
        assert "127.0.0.2" not in proxy.log() and "canary.test" not in proxy.log()


def test_proxy_mode_sends_every_request_through_the_proxy(
        servers: tuple[ViaSiteServer, SiteServer], tmp_path: Path) -> None:
    site, canary = servers
    site.routes.update(proxy_site(site.port, failing=False))
    with ProxyServer("http", tmp_path, auth="crawler:s3cret", host=PROXY_HOST) as proxy:
        result = proxy_crawl(site, tmp_path / "crawl", HARVESTER_PROXY=proxy.url, HARVESTER_PROXY_MODE="proxy")
    assert result.returncode == 0, result.output[-3000:]
    assert stored_paths(result) == {"/docs/", *PAGES}
    assert site.direct_paths() == [], (site.via, proxy.log())
    assert set(site.proxied_paths()) == {"/robots.txt", "/docs/", *PAGES, *CANARY_HOPS}
    # The proxy's own access log (one line per client connection, for its first request).
    assert f"GET 127.0.0.1:{site.port}/robots.txt - 200" in proxy.log(), proxy.log()
    counted = stats(result)
    assert counted["harvester/proxy/proxied"] == len(site.via)
    assert "harvester/proxy/direct" not in counted
    assert_canary_untouched(result, canary, proxy)
    assert "s3cret" not in result.output


def test_socks5_proxy_mode_goes_through_the_guard_proxy(
        servers: tuple[ViaSiteServer, SiteServer], tmp_path: Path) -> None:
    site, canary = servers
    site.routes.update(proxy_site(site.port, failing=False))
    with ProxyServer("socks5", tmp_path, host=PROXY_HOST) as proxy:
        result = proxy_crawl(site, tmp_path / "crawl", HARVESTER_PROXY=proxy.url, HARVESTER_PROXY_MODE="proxy")
    assert result.returncode == 0, result.output[-3000:]
    assert stored_paths(result) == {"/docs/", *PAGES}
    # pproxy logs each connection it relays; all of them went to the site's checked address.
    relayed = re.findall(r"socks5 \S+ -> (\S+)", proxy.log())
    assert relayed and set(relayed) == {f"127.0.0.1:{site.port}"}, proxy.log()
    counted = stats(result)
    assert counted["harvester/proxy/proxied"] == len(site.via)
    assert counted["harvester/proxy/guard_proxy/upstream"] == len(relayed)
    assert_canary_untouched(result, canary, proxy)


def test_fallback_mode_retries_failures_through_the_proxy_once(
        servers: tuple[ViaSiteServer, SiteServer], tmp_path: Path) -> None:
    site, canary = servers
    site.routes.update(proxy_site(site.port, failing=True))
    with ProxyServer("http", tmp_path, host=PROXY_HOST) as proxy:
        result = proxy_crawl(site, tmp_path / "crawl", HARVESTER_PROXY=proxy.url, HARVESTER_PROXY_MODE="fallback",
                             DOWNLOAD_TIMEOUT="3")
    assert result.returncode == 0, result.output[-3000:]
    # Every page is stored, the failing ones from their answer through the proxy.
    assert stored_paths(result) == {"/docs/", *PAGES, *FAILING_DIRECTLY}
    assert sorted(site.proxied_paths()) == sorted(FAILING_DIRECTLY)
    for path, status in FAILING_DIRECTLY.items():  # tried directly once, then once through the proxy
        # (Twisted itself repeats a GET whose kept-alive connection was reset, once.)
        assert site.direct_paths().count(path) == 1 or (status == RESET and site.direct_paths().count(path) == 2)
        assert site.proxied_paths().count(path) == 1
    assert set(site.direct_paths()) == {"/robots.txt", "/docs/", *PAGES, *FAILING_DIRECTLY, *CANARY_HOPS}
    counted = stats(result)
    assert counted["harvester/proxy/fallback/http_403"] == 1
    assert counted["harvester/proxy/fallback/http_429"] == 1
    assert counted["harvester/proxy/fallback/http_503"] == 1
    assert counted["harvester/proxy/fallback/network_error"] == 1
    assert counted["harvester/proxy/fallback/timeout"] == 1
    assert counted["harvester/proxy/fallback"] == len(FAILING_DIRECTLY)
    assert counted["harvester/proxy/proxied"] == len(FAILING_DIRECTLY)
    assert result.output.count("trying again through the proxy") == 1  # one line per host
    assert_canary_untouched(result, canary, proxy)


def test_none_mode_proxies_nothing(servers: tuple[ViaSiteServer, SiteServer], tmp_path: Path) -> None:
    site, canary = servers
    site.routes.update(proxy_site(site.port, failing=True))
    with ProxyServer("http", tmp_path, host=PROXY_HOST) as proxy:
        result = proxy_crawl(site, tmp_path / "crawl", HARVESTER_PROXY=proxy.url, HARVESTER_PROXY_MODE="none",
                             DOWNLOAD_TIMEOUT="3")
    assert result.returncode == 0, result.output[-3000:]
    assert stored_paths(result) == {"/docs/", *PAGES}
    assert site.proxied_paths() == []
    assert " GET " not in proxy.log() and "CONNECT" not in proxy.log()
    assert stats(result) == {}
    assert_canary_untouched(result, canary, None)


def test_direct_is_an_alias_of_proxy_with_a_warning(
        servers: tuple[ViaSiteServer, SiteServer], tmp_path: Path) -> None:
    site, canary = servers
    site.routes.update(proxy_site(site.port, failing=False))
    with ProxyServer("http", tmp_path, host=PROXY_HOST) as proxy:
        result = proxy_crawl(site, tmp_path / "crawl", HARVESTER_PROXY=proxy.url, HARVESTER_PROXY_MODE="direct")
    assert result.returncode == 0, result.output[-3000:]
    assert result.output.count("HARVESTER_PROXY_MODE=direct is deprecated") == 1
    assert site.direct_paths() == [] and site.proxied_paths()
    assert_canary_untouched(result, canary, proxy)


@pytest.mark.parametrize(("settings", "message"), [
    ({"HARVESTER_PROXY_MODE": "proxy"}, "HARVESTER_PROXY_MODE=proxy needs HARVESTER_PROXY"),
    ({"HARVESTER_PROXY_MODE": "sometimes", "HARVESTER_PROXY": "http://127.0.0.3:3128"},
     "HARVESTER_PROXY_MODE='sometimes' must be one of none, fallback, proxy"),
    ({"HARVESTER_PROXY_MODE": "fallback", "HARVESTER_PROXY": "ftp://127.0.0.3:21"}, "the proxy scheme must be one of"),
    ({"HARVESTER_PROXY_MODE": "proxy", "HARVESTER_PROXY": "http://:3128"}, "the proxy URL has no host"),
    ({"HARVESTER_PROXY": "socks4://127.0.0.3:1080"}, "the proxy scheme must be one of"),
])
def test_bad_proxy_settings_stop_the_crawl(tmp_path: Path, settings: dict[str, str], message: str) -> None:
    result = crawl("docs", "http://127.0.0.1:9/docs/", tmp_path, settings={**NO_EMBEDDING, **settings})
    assert result.returncode == 2
    assert "harvester: error: invalid setting: HARVESTER_PROXY" in result.output, result.output[-2000:]
    assert message in result.output, result.output[-2000:]
    assert "Traceback" not in result.output


def tls_context(workdir: Path) -> ssl.SSLContext:
    """A server context with a self-signed certificate for 127.0.0.1 (Scrapy does not verify)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*self_signed(workdir, "127.0.0.1"))
    return context


def test_https_through_a_proxy_known_by_a_private_name(
        servers: tuple[ViaSiteServer, SiteServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CONNECT tunnels to an https site, through a proxy whose name resolves to a loopback address
    that is not allow-listed: the configured proxy is trusted, by name too."""
    site, canary = servers
    site.routes.update(proxy_site(site.port, failing=False))
    site._httpd.socket = tls_context(tmp_path).wrap_socket(site._httpd.socket, server_side=True)
    site.url = site.url.replace("http://", "https://")
    monkeypatch.setenv("HARVESTER_TEST_HOSTS", json.dumps({"canary.test": ["127.0.0.2"],
                                                           "proxy.test": [PROXY_HOST]}))
    with ProxyServer("http", tmp_path, host=PROXY_HOST) as proxy:
        result = proxy_crawl(site, tmp_path / "crawl", HARVESTER_PROXY=f"http://proxy.test:{proxy.port}",
                             HARVESTER_PROXY_MODE="proxy")
    assert result.returncode == 0, result.output[-3000:]
    assert stored_paths(result) == {"/docs/", *PAGES}
    assert f"CONNECT 127.0.0.1:{site.port}" in proxy.log(), proxy.log()
    assert stats(result)["harvester/proxy/proxied"] == len(site.via)
    assert canary.paths() == []
    assert "canary.test" not in proxy.log() and "127.0.0.2" not in proxy.log()


def test_an_https_proxy_is_reached_over_tls_through_the_guard_proxy(
        servers: tuple[ViaSiteServer, SiteServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scrapy cannot speak TLS to a proxy for https targets; the local GuardProxy does, and
    verifies the proxy's certificate (trusted here through SSL_CERT_FILE)."""
    site, canary = servers
    site.routes.update(proxy_site(site.port, failing=False))
    with ProxyServer("https", tmp_path, host=PROXY_HOST) as proxy:
        monkeypatch.setenv("SSL_CERT_FILE", str(proxy.cert_file))
        result = proxy_crawl(site, tmp_path / "crawl", HARVESTER_PROXY=proxy.url, HARVESTER_PROXY_MODE="proxy")
    assert result.returncode == 0, result.output[-3000:]
    assert stored_paths(result) == {"/docs/", *PAGES}
    assert f"CONNECT 127.0.0.1:{site.port}" in proxy.log(), proxy.log()
    counted = stats(result)
    assert counted["harvester/proxy/proxied"] == len(site.via)
    assert counted["harvester/proxy/guard_proxy/upstream"] >= 1
    assert_canary_untouched(result, canary, proxy)
