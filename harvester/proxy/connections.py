"""The GuardProxy's connections: the byte-stream interface its client and target sides share,
relaying bytes between two, and the two ways a target cannot be had (``Refused``, ``Unreachable``).
"""

from __future__ import annotations

import asyncio
from typing import Protocol

# Schemes a browser may ask for; https and wss come as CONNECT, http and ws as absolute-form requests.
TARGET_SCHEMES = ("http", "https", "ws", "wss")
READ_SIZE = 65536


class Stream(Protocol):
    """Either side of a relayed connection: a ``TcpStream``, or python-socks' stream to an upstream."""

    async def read(self, max_bytes: int = ...) -> bytes: ...
    async def write(self, data: bytes) -> None: ...
    async def close(self) -> None: ...


class TcpStream:
    """asyncio's reader and writer behind the small interface python-socks' streams have."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int = READ_SIZE) -> bytes:
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


async def relay(client: Stream, target: Stream, idle_timeout: float) -> None:
    """Bytes both ways until either side closes or stays idle too long."""

    async def pipe(source: Stream, sink: Stream) -> None:
        while True:
            data = await asyncio.wait_for(source.read(READ_SIZE), idle_timeout)
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
