"""A hostile website for crawl tests: bombs, huge and dribbling pages, crawl traps, redirect loops,
broken markup. ``hostile_site()`` returns the routes and the dynamic handler for ``SiteServer``."""

from __future__ import annotations

import functools
import re
import zlib
from collections.abc import Callable

import brotli

from tests.servers.sites import doc_page
from tests.servers.sitesrv import RESET, Route

BOMB_SIZE = 512 * 1024 * 1024  # decompressed; DOWNLOAD_MAXSIZE is 32 MiB
HUGE_SIZE = 40 * 1024 * 1024
CASES = ["good.html", "gzip-bomb.html", "br-bomb.html", "huge.html", "drip.html", "cal/2026-01.html",
         "loop/", "list.html?p=1", "redirect-a.html", "malformed.html", "nested.html", "binary.html",
         "busy.html", "flaky.html", "utf8-labelled-latin1.html", "latin1-labelled-utf8.html",
         "truncated.html", "octet-stream", "reset.html", "long.html?page=" + "x" * 3000]
ACCENTED = "Café au lait, naïve façade, Straße, “quotes” and – dashes."


@functools.cache
def gzip_bomb() -> bytes:
    return _compress(zlib.compressobj(1, zlib.DEFLATED, 31))


@functools.cache
def brotli_bomb() -> bytes:
    return _compress(brotli.Compressor(quality=5))


def _compress(compressor: object) -> bytes:
    step = getattr(compressor, "compress", None) or compressor.process
    chunk = bytes(1 << 20)
    parts = [step(chunk) for _ in range(BOMB_SIZE >> 20)]
    parts.append(compressor.flush() if hasattr(compressor, "flush") else compressor.finish())
    return b"".join(parts)


def _page(title: str, links: list[str]) -> Route:
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return Route(doc_page(title, extra_body=f"<ul>{anchors}</ul>"))


def _calendar(path: str) -> Route | None:
    """/docs/cal/YYYY-MM.html links the next month and the next year, for ever."""
    found = re.fullmatch(r"/docs/cal/(\d{4})-(\d{2})\.html", path)
    if not found:
        return None
    year, month = int(found[1]), int(found[2])
    following = (year + month // 12, month % 12 + 1)
    return _page(f"calendar {year}-{month:02d}",
                 [f"{following[0]}-{following[1]:02d}.html", f"{year + 1}-{month:02d}.html"])


def _loop(path: str) -> Route | None:
    """Any path under /docs/loop/ answers with a page whose relative link adds another level."""
    return _page("loop", ["loop/"]) if path.startswith("/docs/loop/") else None


def _list(path: str) -> Route | None:
    """/docs/list.html?p=N links two new query strings per page."""
    found = re.fullmatch(r"/docs/list\.html\?p=(\d+)(&sort=\w+)?", path)
    if not found:
        return None
    page = int(found[1])
    return _page(f"list page {page}", [f"list.html?p={page + 1}", f"list.html?p={page + 1}&sort=asc"])


def dynamic(path: str) -> Route | None:
    for handler in (_calendar, _loop, _list):
        route = handler(path)
        if route is not None:
            return route
    return None


def _first_then(first: Route, then: Route) -> Callable[[], Route]:
    answers = iter([first])
    return lambda: next(answers, then)


def hostile_site() -> tuple[dict[str, Route], Callable[[str], Route | None]]:
    html = {"Content-Type": "text/html; charset=utf-8"}
    nested = "<div>" * 20000 + "<p>" + "Deeply nested text survives. " * 20 + "</p>" + "</div>" * 20000
    malformed = doc_page("malformed").replace("</div>", "").replace("</p>", "<p><b><i>unclosed <table><td>")
    routes = {
        "/robots.txt": Route("User-agent: *\nDisallow:\n", headers={"Content-Type": "text/plain"}),
        "/docs/": _page("hostile index", CASES),
        "/docs/good.html": Route(doc_page("good")),
        "/docs/gzip-bomb.html": Route(gzip_bomb(), headers={**html, "Content-Encoding": "gzip"}),
        "/docs/br-bomb.html": Route(brotli_bomb(), headers={**html, "Content-Encoding": "br"}),
        "/docs/huge.html": Route(b"<html><body><p>" + b"huge " * (HUGE_SIZE // 5) + b"</p></body></html>"),
        "/docs/drip.html": Route(doc_page("drip"), drip=0.5),
        "/docs/redirect-a.html": Route(b"", 302, {"Location": "/docs/redirect-b.html"}),
        "/docs/redirect-b.html": Route(b"", 302, {"Location": "/docs/redirect-a.html?again=1"}),
        "/docs/malformed.html": Route(malformed),
        "/docs/nested.html": Route(f"<html><head><title>Nested</title></head><body>{nested}</body></html>"),
        "/docs/binary.html": Route(bytes(range(256)) * 256, headers=html),
        # 429 asking for 2 s, then the page; 503 once, then the page.
        "/docs/busy.html": _first_then(Route("busy", 429, {"Retry-After": "2"}), Route(doc_page("busy"))),
        "/docs/flaky.html": _first_then(Route("down", 503), Route(doc_page("flaky"))),
        "/docs/utf8-labelled-latin1.html": Route(
            doc_page("latin", extra_body=f"<p>{ACCENTED}</p>").encode("cp1252"),
            headers={"Content-Type": "text/html; charset=utf-8"}),
        "/docs/latin1-labelled-utf8.html": Route(
            doc_page("utf", extra_body=f"<p>{ACCENTED}</p>").encode("utf-8"),
            headers={"Content-Type": "text/html; charset=iso-8859-1"}),
        # Promises twice the bytes it sends, then closes the connection.
        "/docs/truncated.html": Route(doc_page("truncated"), headers={
            **html, "Content-Length": str(2 * len(doc_page("truncated").encode())), "Connection": "close"}),
        "/docs/reset.html": Route(b"", RESET),
        "/docs/octet-stream": Route(doc_page("octets"), headers={"Content-Type": "application/octet-stream"}),
    }
    return routes, dynamic
