"""A loopback HTTP server for crawl tests: static files and/or in-memory routes, with a request log.

Binds port 0 on 127.0.0.1 and reports its own address (no racy port picking). Threaded, so the
crawler's concurrent requests are served concurrently, as a real site would.
"""

from __future__ import annotations

import gzip
import hashlib
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import unquote, urlsplit

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8", ".htm": "text/html; charset=utf-8",
    ".xml": "application/xml", ".txt": "text/plain; charset=utf-8", ".gz": "application/gzip",
    ".md": "text/markdown; charset=utf-8", ".css": "text/css", ".js": "application/javascript", ".png": "image/png", ".svg": "image/svg+xml",
}


RESET = 0  # a Route status that resets the connection instead of answering


@dataclass
class Route:
    body: bytes | str
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    drip: float = 0.0  # seconds between 16-byte pieces of the body (a slow-dribbling server)
    markdown: bytes | str | None = None  # served instead of body to a request that accepts text/markdown


@dataclass(frozen=True)
class Hit:
    time: float
    path: str
    user_agent: str
    status: int


class SiteServer:
    """``SiteServer(root=dir, routes={"/robots.txt": Route(...)})``; use as a context manager."""

    def __init__(self, root: Path | None = None, routes: dict[str, Route | Callable[[], Route]] | None = None,
                 host: str = "127.0.0.1", port: int = 0,
                 dynamic: Callable[[str], Route | None] | None = None,
                 validators: bool = False) -> None:
        """``validators``: static files get an ETag (a hash of their bytes), so conditional requests
        for unchanged files are answered 304."""
        self.root = root
        self.dynamic = dynamic  # path with query -> Route, for the paths no route or file names
        self.validators = validators
        self.routes = dict(routes or {})
        self.log: list[Hit] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://{host}:{self.port}/"
        # shutdown() waits for the serving loop to notice; at the default 0.5 s poll, every test
        # with a server would wait up to half a second on exit.
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def paths(self) -> list[str]:
        with self._lock:
            return [hit.path for hit in self.log]

    def record(self, hit: Hit) -> None:
        with self._lock:
            self.log.append(hit)

    def resolve(self, path: str, full_path: str | None = None) -> Route:
        route = self.routes.get(path)
        if route is not None:
            return route() if callable(route) else route
        if self.root is not None:
            found = _static(self.root, path)
            if found is not None:
                if self.validators and found.status == 200:
                    digest = hashlib.sha1(found.body if isinstance(found.body, bytes) else found.body.encode()).hexdigest()
                    found.headers["ETag"] = f'"{digest[:20]}"'
                return found
        if self.dynamic is not None:
            found = self.dynamic(full_path or path)
            if found is not None:
                return found
        return Route("<html><head><title>404</title></head><body><h1>Not Found</h1></body></html>", 404,
                     {"Content-Type": "text/html; charset=utf-8"})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                route = server.resolve(path, self.path)
                if route.markdown is not None and "text/markdown" in self.headers.get("Accept", ""):
                    route = Route(route.markdown, route.status,
                                  {**route.headers, "Content-Type": "text/markdown; charset=utf-8"})
                if _not_modified(route, self.headers):
                    server.record(Hit(time.monotonic(), self.path, self.headers.get("User-Agent", ""), 304))
                    self.send_response(304)
                    for name in ("ETag", "Last-Modified"):
                        if name in route.headers:
                            self.send_header(name, route.headers[name])
                    self.end_headers()
                    return
                body = route.body.encode("utf-8") if isinstance(route.body, str) else route.body
                server.record(Hit(time.monotonic(), self.path, self.headers.get("User-Agent", ""), route.status))
                if route.status == RESET:  # no answer: the connection is reset (RST, not FIN)
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.close_connection = True
                    return
                self.send_response(route.status)
                headers = {"Content-Type": _content_type(path), **route.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                if "Content-Length" not in route.headers:  # a route may lie about it (a truncated body)
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    if not route.drip:
                        self.wfile.write(body)
                        return
                    for start in range(0, len(body), 16):
                        self.wfile.write(body[start:start + 16])
                        self.wfile.flush()
                        time.sleep(route.drip)
                except OSError:  # the client gave up (a body over its size limit, a timeout)
                    pass

            def log_message(self, *args: object) -> None:
                pass

        return Handler


def _not_modified(route: Route, request_headers: Any) -> bool:
    """HTTP conditional GET (RFC 9110 13.1): a 200 route with an ``ETag`` or ``Last-Modified``
    header answers 304 when the request's validators match it."""
    if route.status != 200:
        return False
    etag, last_modified = route.headers.get("ETag"), route.headers.get("Last-Modified")
    if_none_match = request_headers.get("If-None-Match")
    if if_none_match is not None:
        return bool(etag) and etag in [tag.strip() for tag in if_none_match.split(",")]
    if_modified_since = request_headers.get("If-Modified-Since")
    if if_modified_since and last_modified:
        try:
            return parsedate_to_datetime(last_modified) <= parsedate_to_datetime(if_modified_since)
        except (TypeError, ValueError):
            return False
    return False


def _content_type(path: str) -> str:
    suffix = Path(path).suffix.lower()
    return CONTENT_TYPES.get(suffix, "text/html; charset=utf-8" if not suffix else "application/octet-stream")


def _static(root: Path, path: str) -> Route | None:
    relative = unquote(path).lstrip("/")
    target = (root / relative).resolve()
    if not str(target).startswith(str(root.resolve())):
        return None
    if target.is_dir():
        if not path.endswith("/"):
            return Route(b"", 301, {"Location": path + "/"})
        target = target / "index.html"
    if target.is_file():
        return Route(target.read_bytes(), 200, {"Content-Type": _content_type(target.name)})
    packed = target.with_name(target.name + ".gz")
    if packed.is_file():  # Debian gzips some large doc pages
        return Route(gzip.decompress(packed.read_bytes()), 200, {"Content-Type": _content_type(target.name)})
    return None
