"""One client connection of the GuardProxy: HTTP/1.1 requests (parsed and framed by h11) and
CONNECT tunnels, each target opened through ``GuardProxy.open``, so each passes the guard."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import h11

from harvester.proxy.connections import (
    READ_SIZE,
    TARGET_SCHEMES,
    Refused,
    Stream,
    Unreachable,
    relay,
)

if TYPE_CHECKING:
    from harvester.proxy.guard_proxy import GuardProxy

_HOP_BY_HOP = {
    b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization", b"proxy-authenticate",
    b"te", b"trailer", b"upgrade",
}


class ClientSession:
    """The requests of one client connection: a CONNECT tunnel, or plain-HTTP requests kept
    alive, each checked on its own (one connection may name many hosts)."""

    def __init__(self, proxy: GuardProxy, client: Stream) -> None:
        self.proxy = proxy
        self.client = client
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=READ_SIZE)
        self.target: Stream | None = None
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
            await relay(self.client, upstream, self.proxy.idle_timeout)
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
        self.target_conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=READ_SIZE)

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
        await relay(self.client, target, self.proxy.idle_timeout)
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
            data = plain_response(status, text)
        await self.client.write(data)
        return False

    async def _close_target(self) -> None:
        if self.target is not None:
            await self.target.close()
        self.target = self.target_key = self.target_conn = None


async def _next_event(conn: h11.Connection, stream: Stream, idle_timeout: float) -> Any:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        data = await asyncio.wait_for(stream.read(READ_SIZE), idle_timeout)
        conn.receive_data(data)


def _authority(target: str) -> tuple[str, int]:
    host, _, port_text = target.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        port = 0
    return host, port


def plain_response(status: int, text: str) -> bytes:
    body = (text + "\n").encode("utf-8", "replace")
    return (f"HTTP/1.1 {status} {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
