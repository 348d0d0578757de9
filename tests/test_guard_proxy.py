"""GuardProxy: the browser's validating proxy, against real servers and real upstream proxies on loopback.

The test sites are on 127.0.0.1 (allow-listed); the canary on 127.0.0.2 is loopback but not
allow-listed, so it must never see a request. Names get addresses from a stub resolver.
"""

from __future__ import annotations

import asyncio
import gc
import http.client
import logging
import shutil
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvester.guard.rules import AllowList
from harvester.proxy import BROWSER_ARGS, playwright_proxy
from harvester.proxy.guard_proxy import GuardProxy
from tests.conftest import import_prerequisite, requires
from tests.servers.proxysrv import ProxyServer
from tests.servers.sitesrv import Route, SiteServer

ALLOW = AllowList.parse("127.0.0.1")
TABLE = {
    "docs.test": ["127.0.0.1"],
    "intranet.test": ["10.0.0.5"],
    "metadata.test": ["169.254.169.254"],
    "rebind.test": ["127.0.0.2"],
    "mixed.test": ["10.0.0.5", "127.0.0.1"],
}


async def stub_resolve(host: str, port: int) -> list[str]:
    if host.lower() not in TABLE:
        raise OSError(f"stub: no such host {host}")
    return TABLE[host.lower()]


@pytest.fixture
def site() -> Iterator[SiteServer]:
    with SiteServer(routes={"/a": Route("<p>site</p>"), "/b": Route("<p>b</p>")}) as server:
        yield server


@pytest.fixture
def other_site() -> Iterator[SiteServer]:
    with SiteServer(routes={"/c": Route("<p>other</p>")}) as server:
        yield server


@pytest.fixture
def canary() -> Iterator[SiteServer]:
    with SiteServer(routes={"/": Route("canary")}, host="127.0.0.2") as server:
        yield server


@pytest.fixture
def proxy() -> Iterator[GuardProxy]:
    with GuardProxy(ALLOW, resolve=stub_resolve) as guard:
        yield guard


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _get(proxy_url: str, url: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", _port(proxy_url), timeout=10)
    connection.request("GET", url)
    response = connection.getresponse()
    return response.status, response.read()


def _tunnel_get(proxy_url: str, host: str, port: int, path: str = "/a") -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", _port(proxy_url), timeout=10)
    connection.set_tunnel(host, port)
    connection.request("GET", path)
    response = connection.getresponse()
    return response.status, response.read()


def test_start_returns_a_loopback_url_and_stop_closes_it() -> None:
    guard = GuardProxy(ALLOW)
    url = guard.start()
    assert url.startswith("http://127.0.0.1:")
    socket.create_connection(("127.0.0.1", _port(url)), timeout=5).close()
    guard.stop()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", _port(url)), timeout=5).close()


def test_stopping_as_a_connection_arrives_leaves_no_task_behind(monkeypatch, caplog) -> None:
    """A connection accepted as the proxy stops used to start its task after the shutdown looked
    for tasks to end, and was destroyed pending when the loop closed (about one stop in five)."""
    unraisable: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda report: unraisable.append(report.exc_value))
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        for _ in range(30):
            guard = GuardProxy(ALLOW)
            url = guard.start()
            socket.create_connection(("127.0.0.1", _port(url)), timeout=5).close()
            guard.stop()
        # Once, after all stops: a collection walks the whole heap, which in a worker that ran other
        # tests first takes most of a second.
        gc.collect()
    assert unraisable == [] and caplog.records == []


def test_plain_http_keeps_the_connection_alive_and_checks_every_request(
        proxy: GuardProxy, site: SiteServer, other_site: SiteServer, canary: SiteServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", _port(proxy.url or ""), timeout=10)
    answers = []
    for url in (site.url + "a", other_site.url + "c", site.url + "b", canary.url):
        connection.request("GET", url)
        response = connection.getresponse()
        answers.append((response.status, response.read()))
    assert answers[:3] == [(200, b"<p>site</p>"), (200, b"<p>other</p>"), (200, b"<p>b</p>")]
    assert answers[3][0] == 403 and b"loopback" in answers[3][1]
    assert site.paths() == ["/a", "/b"] and other_site.paths() == ["/c"]
    assert canary.paths() == []
    assert proxy.counts["refused/loopback"] == 1


def test_connect_tunnels_to_allowed_targets_only(proxy: GuardProxy, site: SiteServer, canary: SiteServer) -> None:
    assert _tunnel_get(proxy.url or "", "127.0.0.1", site.port) == (200, b"<p>site</p>")
    with pytest.raises(OSError, match="403"):
        _tunnel_get(proxy.url or "", "127.0.0.2", canary.port)
    with pytest.raises(OSError, match="403"):
        _tunnel_get(proxy.url or "", "::ffff:127.0.0.2", canary.port)
    assert site.paths() == ["/a"]
    assert canary.paths() == []


@pytest.mark.parametrize("spelling", ["2130706434", "0x7f.0.0.2", "127.2", "0177.0.0.2", "[::ffff:127.0.0.2]"])
def test_every_spelling_of_the_canary_is_refused(proxy: GuardProxy, canary: SiteServer, spelling: str) -> None:
    status, body = _get(proxy.url or "", f"http://{spelling}:{canary.port}/")
    assert status == 403 and b"loopback" in body
    assert canary.paths() == []


@pytest.mark.parametrize(("name", "reason"), [("intranet.test", "private"), ("metadata.test", "link_local"),
                                              ("rebind.test", "loopback")])
def test_a_name_resolving_to_a_refused_address_is_refused(
        proxy: GuardProxy, canary: SiteServer, name: str, reason: str) -> None:
    status, body = _get(proxy.url or "", f"http://{name}:{canary.port}/")
    assert status == 403 and reason.encode() in body
    with pytest.raises(OSError, match="403"):
        _tunnel_get(proxy.url or "", name, canary.port)
    assert proxy.counts[f"refused/{reason}"] == 2
    assert canary.paths() == []


def test_a_name_is_connected_to_the_address_that_passed(proxy: GuardProxy, site: SiteServer) -> None:
    assert _get(proxy.url or "", f"http://docs.test:{site.port}/a") == (200, b"<p>site</p>")
    # Of a private and an allowed address, only the allowed one is connected to.
    assert _tunnel_get(proxy.url or "", "mixed.test", site.port, "/b") == (200, b"<p>b</p>")
    assert site.paths() == ["/a", "/b"]


def test_an_unresolvable_name_without_upstream_is_a_bad_gateway(proxy: GuardProxy) -> None:
    status, body = _get(proxy.url or "", "http://nowhere.test/")
    assert status == 502 and b"resolve" in body


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/x", "file:///etc/passwd", "gopher://127.0.0.1:70/"])
def test_other_schemes_are_refused(proxy: GuardProxy, url: str) -> None:
    status, body = _get(proxy.url or "", url)
    assert status == 403 and b"scheme" in body
    assert proxy.counts["refused/scheme"] == 1


def test_origin_form_requests_are_not_served(proxy: GuardProxy) -> None:
    assert _get(proxy.url or "", "/a")[0] == 400


def _upgrade_server() -> tuple[socket.socket, list[bytes]]:
    """A server that accepts any WebSocket upgrade and echoes what follows."""
    listener = socket.create_server(("127.0.0.1", 0))
    seen: list[bytes] = []

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            head = b""
            while b"\r\n\r\n" not in head:
                head += connection.recv(4096)
            seen.append(head)
            connection.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
            while data := connection.recv(4096):
                connection.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    return listener, seen


def test_a_websocket_upgrade_over_http_is_relayed(proxy: GuardProxy) -> None:
    listener, seen = _upgrade_server()
    port = listener.getsockname()[1]
    with listener, socket.create_connection(("127.0.0.1", _port(proxy.url or "")), timeout=10) as client:
        client.sendall(f"GET http://127.0.0.1:{port}/ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                       "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += client.recv(4096)
        assert head.startswith(b"HTTP/1.1 101")
        client.sendall(b"ping-frame")
        assert client.recv(4096) == b"ping-frame"
    assert seen and seen[0].startswith(b"GET /ws HTTP/1.1") and b"upgrade: websocket" in seen[0].lower()


@pytest.mark.parametrize("kind", ["http", "socks5"])
def test_chains_to_a_real_upstream_after_the_local_check(
        tmp_path: Path, site: SiteServer, canary: SiteServer, kind: str) -> None:
    with ProxyServer(kind, tmp_path, auth="user:secret") as upstream, \
            GuardProxy(ALLOW, upstream.url, resolve=stub_resolve) as guard:
        assert _get(guard.url or "", site.url + "a") == (200, b"<p>site</p>")
        assert _tunnel_get(guard.url or "", "docs.test", site.port, "/b") == (200, b"<p>b</p>")
        assert _get(guard.url or "", canary.url)[0] == 403
        assert _get(guard.url or "", f"http://rebind.test:{canary.port}/")[0] == 403
        assert guard.counts["upstream"] == 2 and guard.counts["direct"] == 0
    log = upstream.log()
    # The upstream was asked for the checked address, never for the canary.
    assert log.count(f"127.0.0.1:{site.port}") == 2, log
    assert "127.0.0.2" not in log and "rebind.test" not in log
    assert site.paths() == ["/a", "/b"] and canary.paths() == []


def test_chains_to_an_https_upstream_over_verified_tls(
        tmp_path: Path, site: SiteServer, monkeypatch: pytest.MonkeyPatch) -> None:
    with ProxyServer("https", tmp_path, host="127.0.0.3") as upstream:
        with GuardProxy(ALLOW, upstream.url) as guard:  # the proxy's certificate is not trusted
            assert _get(guard.url or "", site.url + "a")[0] == 502
        monkeypatch.setenv("SSL_CERT_FILE", str(upstream.cert_file))
        with GuardProxy(ALLOW, upstream.url) as guard:
            assert _get(guard.url or "", site.url + "a") == (200, b"<p>site</p>")
            assert guard.counts["upstream"] == 1
    assert f"CONNECT 127.0.0.1:{site.port}" in upstream.log()
    assert site.paths() == ["/a"]


def test_an_unreachable_upstream_is_a_bad_gateway_not_a_direct_connection(
        tmp_path: Path, site: SiteServer) -> None:
    with ProxyServer("socks5", tmp_path) as upstream:
        dead = upstream.url
    with GuardProxy(ALLOW, dead) as guard:
        assert _get(guard.url or "", site.url + "a")[0] == 502
    assert site.paths() == []


class _NoDirectRoute(GuardProxy):
    """A network where this machine cannot reach the site directly (only the upstream can)."""

    async def _connect_direct(self, address: str, port: int):  # type: ignore[no-untyped-def]
        raise ConnectionRefusedError(f"no route to {address}:{port}")


def test_fallback_goes_through_the_upstream_only_when_direct_fails(tmp_path: Path, site: SiteServer) -> None:
    with ProxyServer("http", tmp_path) as upstream:
        with GuardProxy(ALLOW, upstream.url, fallback=True) as guard:
            assert _get(guard.url or "", site.url + "a") == (200, b"<p>site</p>")
            assert guard.counts == {"direct": 1}
        with _NoDirectRoute(ALLOW, upstream.url, fallback=True) as guard:
            assert _get(guard.url or "", site.url + "b") == (200, b"<p>b</p>")
            assert guard.counts == {"fallback": 1}
    assert f"127.0.0.1:{site.port}" in upstream.log()
    assert site.paths() == ["/a", "/b"]


def test_stop_closes_open_tunnels(site: SiteServer) -> None:
    guard = GuardProxy(ALLOW)
    url = guard.start()
    client = socket.create_connection(("127.0.0.1", _port(url)), timeout=10)
    client.sendall(f"CONNECT 127.0.0.1:{site.port} HTTP/1.1\r\nHost: 127.0.0.1:{site.port}\r\n\r\n".encode())
    assert client.recv(4096).startswith(b"HTTP/1.1 200")
    guard.stop()
    assert client.recv(4096) == b""
    client.close()


def test_too_many_connections_are_turned_away(site: SiteServer) -> None:
    with GuardProxy(ALLOW, max_connections=1) as guard:
        first = socket.create_connection(("127.0.0.1", _port(guard.url or "")), timeout=10)
        first.sendall(f"CONNECT 127.0.0.1:{site.port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert first.recv(4096).startswith(b"HTTP/1.1 200")
        assert _get(guard.url or "", site.url + "a")[0] == 503
        first.close()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.e2e
@requires(CHROMIUM is not None, reason="needs Chromium (scripts/bootstrap.sh --test installs Debian's)")
def test_a_real_chromium_through_the_proxy_never_reaches_the_canary() -> None:
    """Sub-resources, fetch, a WebSocket and a redirect hop of a page, all from the browser: the
    page and its own requests load, every connection to the canary is refused at the proxy."""
    playwright_api = import_prerequisite("playwright.async_api")
    canary = SiteServer(routes={}, host="127.0.0.2")
    try:
        site = SiteServer(routes={}, port=canary.port)
    except OSError:
        pytest.skip("no common free port on 127.0.0.1 and 127.0.0.2")
    port = canary.port
    site.routes.update({
        "/": Route(f"""<html><head><title>app</title></head><body><h1>hello</h1>
            <img src="http://127.0.0.2:{port}/img"><img src="http://localhost:{port}/same-site.png">
            <script>
            fetch("http://127.0.0.2:{port}/fetch").catch(() => 0);
            try {{ new WebSocket("ws://127.0.0.2:{port}/ws"); }} catch (e) {{}}
            fetch("/api").then(r => r.text()).then(t => {{
                document.body.insertAdjacentHTML("beforeend", "<p id=api>" + t + "</p>"); }});
            </script></body></html>"""),
        "/api": Route("api-ok"),
        "/moved": Route(b"", 302, {"Location": f"http://127.0.0.2:{port}/redirect-target"}),
    })

    async def browse(proxy_url: str) -> tuple[str, int | None]:
        async with playwright_api.async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", *BROWSER_ARGS], proxy=playwright_proxy(proxy_url))
            try:
                page = await browser.new_page()
                await page.goto(site.url, wait_until="networkidle")
                await page.wait_for_selector("#api", timeout=10000)
                text = await page.inner_text("#api")
                moved = await page.goto(site.url + "moved")
                return text, moved.status if moved else None
            finally:
                await browser.close()

    with canary, site, GuardProxy(ALLOW) as guard:
        text, moved_status = asyncio.run(browse(guard.url or ""))
    assert text == "api-ok"
    assert moved_status == 403  # the redirect hop was refused at the proxy
    assert {"/", "/api", "/same-site.png", "/moved"} <= set(site.paths())
    assert canary.paths() == []
    assert guard.refused_hosts == {"127.0.0.2": "loopback"}
    assert guard.counts["refused/loopback"] >= 3  # img, fetch, WebSocket, redirect target
