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
HTTP/1.1 parsing and framing are h11's (``harvester.proxy.client_session``); the handshakes with an
upstream are python-socks'.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, Self

from harvester.guard.rules import AllowList, parse_ip
from harvester.proxy.client_session import ClientSession, plain_response
from harvester.proxy.connections import (
    READ_SIZE,
    TARGET_SCHEMES,
    Refused,
    Stream,
    TcpStream,
    Unreachable,
)
from harvester.proxy.upstream import ProxyURL

logger = logging.getLogger(__name__)

Resolve = Callable[[str, int], Awaitable[list[str]]]


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

    def __enter__(self) -> Self:
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
                asyncio.start_server(self._serve_client, "127.0.0.1", 0, limit=READ_SIZE)
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
        # A connection accepted as the server closes starts its task a few turns later: let it start
        # and register, or it is left pending when the loop closes (cancelled unstarted, it raises).
        current = asyncio.current_task()
        for _turn in range(10):
            if not asyncio.all_tasks() - self._tasks - {current}:
                break
            await asyncio.sleep(0)
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

    async def open(self, scheme: str, host: str, port: int) -> Stream:
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

    async def _connect_direct(self, address: str, port: int) -> Stream:
        reader, writer = await asyncio.open_connection(address, port, limit=READ_SIZE)
        return TcpStream(reader, writer)

    async def _through_upstream(self, host: str, port: int, event: str) -> Stream:
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
        client = TcpStream(reader, writer)
        try:
            if len(self._tasks) > self.max_connections:
                await client.write(plain_response(503, "too many connections to the browser proxy"))
                return
            await ClientSession(self, client).run()
        except (asyncio.CancelledError, TimeoutError, ConnectionError):
            pass
        except Exception:  # one broken connection never stops the proxy
            logger.debug("GuardProxy connection failed", exc_info=True)
        finally:
            self._tasks.discard(task)
            writer.close()
