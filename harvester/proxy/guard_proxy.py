"""GuardProxy: a local HTTP proxy that applies the SSRF guard to every connection made through it.

The browser (Chromium under scrapy-playwright) resolves names itself, follows redirects, and opens
WebSockets, service workers and popups that route interception never sees. Sending all of its
traffic through this proxy puts the guard where the connections are made: each CONNECT target and
each plain-HTTP request is resolved here once (``getaddrinfo``), every address is judged with the
rules of ``harvester.guard.rules`` (the same as the Twisted resolver's), and the connection goes to an
address that passed: there is no second lookup that DNS rebinding could answer differently.

Refused targets get ``403`` with a one-line reason, are counted (``refusals``), and logged once
per host. With ``upstream`` (``HARVESTER_PROXY``), connections that passed the check go through
that proxy (HTTP CONNECT, over TLS for an https proxy, or SOCKS5), always or only after a direct
connection failed (``fallback=True``). The upstream is asked for the checked address, not the name,
so it cannot resolve the name to somewhere else either; only a name that does not resolve here at
all is handed to the upstream by name (it may resolve names this machine cannot, and it is trusted).

Written here rather than embedding an existing proxy (proxy.py, pproxy): none of them lets a
caller pick the address to connect to after its own check, and chain to SOCKS5 and HTTP upstreams.
HTTP/1.1 parsing and framing are h11's; the handshakes with an upstream are python-socks'.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

import h11

from harvester.guard.rules import AllowList, parse_ip
from harvester.proxy.upstream import ProxyURL

logger = logging.getLogger(__name__)

Resolve = Callable[[str, int], Awaitable[list[str]]]
# Schemes a browser may ask for; https and wss come as CONNECT, http and ws as absolute-form requests.
TARGET_SCHEMES = ("http", "https", "ws", "wss")
_HOP_BY_HOP = {
    b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization", b"proxy-authenticate",
    b"te", b"trailer", b"upgrade",
}
_READ_SIZE = 65536


class _Stream(Protocol):
    async def read(self, max_bytes: int = ...) -> bytes: ...
    async def write(self, data: bytes) -> None: ...
    async def close(self) -> None: ...


class _TcpStream:
    """asyncio's reader and writer behind the small interface python-socks' streams have."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int = _READ_SIZE) -> bytes:
        return await self._reader.read(max_bytes)

    async def write(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()

    async def close(self) -> None:
        self._writer.close()


class Refused(Exception):
    """The guard refused a target (HTTP 403)."""

    def __init__(self, host: str, reason: str) -> None:
        super().__init__(f"{host}: {reason}")
        self.host = host
        self.reason = reason


class Unreachable(Exception):
    """The target passed the guard but no connection could be made (HTTP 502)."""


async def system_resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, in the resolver's order, each once."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class GuardProxy:
    """``GuardProxy(allow, upstream=None).start()`` -> ``"http://127.0.0.1:PORT"``; ``.stop()``.

    ``allow``: the user's ``HARVESTER_ALLOWED_HOSTS``. ``upstream``: an http, https or socks5 proxy
    URL to chain to, always, or with ``fallback=True`` only when a direct connection fails.
    ``check=False`` turns the guard off (``HARVESTER_SSRF_GUARD_ENABLED=0``). ``resolve`` replaces
    the system resolver (tests give names any address with it). ``on_event`` is called from the
    proxy's thread with ``"refused/<reason>"``, ``"direct"``, ``"upstream"`` or ``"fallback"``.
    """

    def __init__(
        self,
        allow: AllowList,
        upstream: str | None = None,
        *,
        fallback: bool = False,
        check: bool = True,
        resolve: Resolve | None = None,
        connect_timeout: float = 30.0,
        idle_timeout: float = 300.0,
        max_connections: int = 256,
        on_event: Callable[[str], Any] | None = None,
    ) -> None:
        self.allow = allow
        self.upstream = ProxyURL.parse(upstream) if upstream else None
        self.fallback = fallback
        self.check = check
        self.resolve = resolve or system_resolve
        self.connect_timeout = connect_timeout
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self.on_event = on_event
        self.counts: Counter[str] = Counter()
        self.refused_hosts: dict[str, str] = {}
        self.url: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._lock = threading.Lock()

    # Lifecycle ---------------------------------------------------------------------------

    def start(self) -> str:
        """Listen on a free loopback port in a daemon thread; returns the proxy's URL."""
        if self.url:
            return self.url
        ready = threading.Event()
        failure: list[Exception] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, args=(ready, failure), name="GuardProxy", daemon=True)
        self._thread.start()
        ready.wait(30)
        if failure:
            raise failure[0]
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        logger.debug("GuardProxy listening on %s (upstream %s)", self.url,
                     self.upstream.redacted if self.upstream else "none")
        return self.url

    def stop(self) -> None:
        """Close the listening socket and every connection, and end the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not loop.is_running():
            return
        future = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
        try:
            future.result(timeout=10)
        except Exception:  # stopping must not fail the caller
            logger.debug("GuardProxy did not shut down cleanly", exc_info=True)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        self.url = None

    def __enter__(self) -> GuardProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, ready: threading.Event, failure: list[Exception]) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(self._serve_client, "127.0.0.1", 0, limit=_READ_SIZE)
            )
        except Exception as exc:  # handed to start()
            failure.append(exc)
            ready.set()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)

    # Bookkeeping -------------------------------------------------------------------------

    def _event(self, name: str) -> None:
        with self._lock:
            self.counts[name] += 1
        if self.on_event is not None:
            try:
                self.on_event(name)
            except Exception:  # a stats hook must not break a connection
                logger.debug("GuardProxy on_event failed", exc_info=True)

    def _refused(self, host: str, reason: str) -> Refused:
        self._event(f"refused/{reason}")
        with self._lock:
            first = host not in self.refused_hosts
            self.refused_hosts.setdefault(host, reason)
        if first:
            logger.warning(
                "GuardProxy refused to connect to %s (%s): not a public internet address. Allow "
                "it with HARVESTER_ALLOWED_HOSTS if you trust it.", host, reason,
            )
        return Refused(host, reason)

    # The guard ---------------------------------------------------------------------------

    async def checked_addresses(self, scheme: str, host: str, port: int) -> list[str] | None:
        """The addresses of ``host`` a connection may go to (resolved once), or None when the
        name does not resolve here. Raises Refused."""
        if scheme not in TARGET_SCHEMES:
            raise self._refused(host or "?", "scheme")
        if not host or not 0 < port < 65536:
            raise self._refused(host or "?", "invalid_url")
        literal = parse_ip(host)
        if literal is not None:
            candidates = [str(literal)]
        else:
            try:
                candidates = await asyncio.wait_for(self.resolve(host, port), self.connect_timeout)
            except (OSError, TimeoutError, UnicodeError):
                return None
        if not self.check or (literal is None and self.allow.allows_name(host, port)):
            return candidates
        passed, reason = [], "no_address"
        for text in candidates:
            refusal = self.allow.resolved_refusal(text, port)
            if refusal is None:
                passed.append(text)
            else:
                reason = refusal
        if not passed:
            raise self._refused(host.lower(), reason)
        return passed

    async def open(self, scheme: str, host: str, port: int) -> _Stream:
        """A connection to ``host:port`` that passed the guard (directly or through the
        upstream). Raises Refused or Unreachable."""
        addresses = await self.checked_addresses(scheme, host, port)
        if addresses is None:
            if self.upstream is None:
                raise Unreachable(f"cannot resolve {host}")
            return await self._through_upstream(host, port, "upstream")
        if self.upstream is not None and not self.fallback:
            return await self._through_upstream(addresses[0], port, "upstream")
        error: Exception | None = None
        for address in addresses:
            try:
                stream = await asyncio.wait_for(self._connect_direct(address, port), self.connect_timeout)
            except (OSError, TimeoutError) as exc:
                error = exc
                continue
            self._event("direct")
            return stream
        if self.upstream is not None:  # fallback: the direct connection failed
            logger.info("GuardProxy: %s:%s unreachable directly (%s), trying %s", host, port,
                        error.__class__.__name__, self.upstream.redacted)
            return await self._through_upstream(addresses[0], port, "fallback")
        raise Unreachable(f"cannot connect to {host}:{port} ({error.__class__.__name__})")

    async def _connect_direct(self, address: str, port: int) -> _Stream:
        reader, writer = await asyncio.open_connection(address, port, limit=_READ_SIZE)
        return _TcpStream(reader, writer)

    async def _through_upstream(self, host: str, port: int, event: str) -> _Stream:
        assert self.upstream is not None
        try:
            stream = await self.upstream.open_tunnel(host, port, self.connect_timeout)
        except Exception as exc:  # python-socks raises its own and OS errors
            raise Unreachable(f"proxy {self.upstream.redacted}: {exc}") from exc
        self._event(event)
        return stream

    # One client connection ---------------------------------------------------------------

    async def _serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        client = _TcpStream(reader, writer)
        try:
            if len(self._tasks) > self.max_connections:
                await client.write(_plain_response(503, "too many connections to the browser proxy"))
                return
            await _ClientSession(self, client).run()
        except (asyncio.CancelledError, TimeoutError, ConnectionError):
            pass
        except Exception:  # one broken connection never stops the proxy
            logger.debug("GuardProxy connection failed", exc_info=True)
        finally:
            self._tasks.discard(task)
            writer.close()


class _ClientSession:
    """The requests of one client connection: a CONNECT tunnel, or plain-HTTP requests kept
    alive, each checked on its own (one connection may name many hosts)."""

    def __init__(self, proxy: GuardProxy, client: _Stream) -> None:
        self.proxy = proxy
        self.client = client
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=_READ_SIZE)
        self.target: _Stream | None = None
        self.target_key: tuple[str, int] | None = None
        self.target_conn: h11.Connection | None = None

    async def run(self) -> None:
        try:
            while True:
                event = await _next_event(self.conn, self.client, self.proxy.idle_timeout)
                if not isinstance(event, h11.Request):
                    return
                if not await self._serve(event):
                    return
                if self.conn.our_state is not h11.DONE or self.conn.their_state is not h11.DONE:
                    return
                self.conn.start_next_cycle()
        except h11.RemoteProtocolError as exc:
            if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                await self._reply(400, f"bad request: {exc}")
        finally:
            await self._close_target()

    async def _serve(self, request: h11.Request) -> bool:
        """Answer one request; False when the client connection must end."""
        target = request.target.decode("latin-1")
        if request.method == b"CONNECT":
            host, port = _authority(target)
            return await self._tunnel(request, host, port)
        try:
            parts = urlsplit(target)
            scheme, host, port = parts.scheme.lower(), parts.hostname or "", parts.port
        except ValueError:
            return await self._reply(400, "invalid request target")
        if not scheme:
            return await self._reply(400, "this is a proxy: send absolute-form requests")
        if scheme in ("https", "wss"):
            return await self._reply(501, f"use CONNECT for {scheme}")
        if scheme not in TARGET_SCHEMES:
            self.proxy._refused(host or target[:80], "scheme")
            return await self._reply(403, f"refused by the SSRF guard: scheme {scheme!r}")
        port = port or 80
        try:
            await self._target_for(scheme, host, port)
        except Refused as exc:
            return await self._reply(403, f"refused by the SSRF guard: {exc.host} ({exc.reason})")
        except Unreachable as exc:
            return await self._reply(502, str(exc))
        return await self._forward(request, parts)

    async def _tunnel(self, request: h11.Request, host: str, port: int) -> bool:
        event = await _next_event(self.conn, self.client, self.proxy.idle_timeout)
        if not isinstance(event, h11.EndOfMessage):
            return await self._reply(400, "CONNECT with a body")
        try:
            upstream = await self.proxy.open("https", host, port)
        except Refused as exc:
            return await self._reply(403, f"refused by the SSRF guard: {exc.host} ({exc.reason})")
        except Unreachable as exc:
            return await self._reply(502, str(exc))
        try:
            await self.client.write(self.conn.send(h11.Response(status_code=200, headers=[],
                                                                reason=b"Connection established")))
            trailing, _ = self.conn.trailing_data
            if trailing:
                await upstream.write(trailing)
            await _relay(self.client, upstream, self.proxy.idle_timeout)
        finally:
            await upstream.close()
        return False

    async def _target_for(self, scheme: str, host: str, port: int) -> None:
        key = (host.lower(), port)
        if self.target is not None and self.target_key == key and self.target_conn is not None \
                and self.target_conn.our_state is h11.IDLE:
            # A kept-alive connection to the same host and port: the check already passed for
            # it, and reusing it makes no new lookup.
            return
        await self._close_target()
        self.target = await self.proxy.open(scheme, host, port)
        self.target_key = key
        self.target_conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=_READ_SIZE)

    async def _forward(self, request: h11.Request, parts: Any) -> bool:
        target, tconn = self.target, self.target_conn
        assert target is not None and tconn is not None
        upgrade = any(name == b"upgrade" for name, _ in request.headers)
        headers = [(name, value) for name, value in request.headers if name not in _HOP_BY_HOP]
        if upgrade:  # a WebSocket over http:// keeps the headers that ask for the switch
            headers += [(b"connection", b"upgrade")]
            headers += [(name, value) for name, value in request.headers if name == b"upgrade"]
        if not any(name == b"host" for name, _ in headers):
            headers.append((b"host", parts.netloc.rpartition("@")[2].encode("latin-1")))
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        await target.write(tconn.send(h11.Request(method=request.method, target=path.encode("latin-1"),
                                                  headers=headers)))
        while True:  # the request body
            event = await _next_event(self.conn, self.client, self.proxy.idle_timeout)
            if isinstance(event, h11.Data):
                await target.write(tconn.send(h11.Data(data=event.data)))
            elif isinstance(event, h11.EndOfMessage):
                await target.write(tconn.send(h11.EndOfMessage()))
                break
            else:
                return False
        while True:  # the response
            event = await _next_event(tconn, target, self.proxy.idle_timeout)
            if isinstance(event, h11.InformationalResponse):
                if event.status_code == 101:
                    return await self._switch(event)
                await self.client.write(self.conn.send(event))
            elif isinstance(event, h11.Response):
                kept = [(name, value) for name, value in event.headers if name not in _HOP_BY_HOP]
                await self.client.write(self.conn.send(h11.Response(
                    status_code=event.status_code, headers=kept, reason=event.reason)))
            elif isinstance(event, h11.Data):
                await self.client.write(self.conn.send(h11.Data(data=event.data)))
            elif isinstance(event, h11.EndOfMessage):
                await self.client.write(self.conn.send(h11.EndOfMessage()))
                break
            else:  # the target closed mid-response
                return False
        if tconn.our_state is h11.DONE and tconn.their_state is h11.DONE:
            tconn.start_next_cycle()
        else:
            await self._close_target()
        return True

    async def _switch(self, response: h11.InformationalResponse) -> bool:
        """The target accepted a WebSocket upgrade: from here on, bytes both ways."""
        target, tconn = self.target, self.target_conn
        assert target is not None and tconn is not None
        await self.client.write(self.conn.send(response))
        from_client, _ = self.conn.trailing_data
        from_target, _ = tconn.trailing_data
        if from_client:
            await target.write(from_client)
        if from_target:
            await self.client.write(from_target)
        await _relay(self.client, target, self.proxy.idle_timeout)
        return False

    async def _reply(self, status: int, text: str) -> bool:
        body = (text + "\n").encode("utf-8", "replace")
        try:
            data = self.conn.send(h11.Response(status_code=status, headers=[
                (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ]))
            data = (data or b"") + (self.conn.send(h11.Data(data=body)) or b"")
            data += self.conn.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError:
            data = _plain_response(status, text)
        await self.client.write(data)
        return False

    async def _close_target(self) -> None:
        if self.target is not None:
            await self.target.close()
        self.target = self.target_key = self.target_conn = None


async def _next_event(conn: h11.Connection, stream: _Stream, idle_timeout: float) -> Any:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        data = await asyncio.wait_for(stream.read(_READ_SIZE), idle_timeout)
        conn.receive_data(data)


async def _relay(client: _Stream, target: _Stream, idle_timeout: float) -> None:
    """Bytes both ways until either side closes or stays idle too long."""

    async def pipe(source: _Stream, sink: _Stream) -> None:
        while True:
            data = await asyncio.wait_for(source.read(_READ_SIZE), idle_timeout)
            if not data:
                return
            await sink.write(data)

    tasks = [asyncio.ensure_future(pipe(client, target)), asyncio.ensure_future(pipe(target, client))]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _authority(target: str) -> tuple[str, int]:
    host, _, port_text = target.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        port = 0
    return host, port


def _plain_response(status: int, text: str) -> bytes:
    body = (text + "\n").encode("utf-8", "replace")
    return (f"HTTP/1.1 {status} {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
