"""Outbound proxy URLs (``HARVESTER_PROXY``): parsing, checking and connecting through one.

Scrapy-free, so the rules can be tested alone and the browser's GuardProxy can use them too.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

PROXY_SCHEMES = ("http", "https", "socks5")
_DEFAULT_PORTS = {"http": 80, "https": 443, "socks5": 1080}


class ProxyURLError(ValueError):
    """A proxy URL Harvester cannot use."""


@dataclass(frozen=True)
class ProxyURL:
    scheme: str
    host: str
    port: int
    username: str | None = None
    password: str | None = None

    @classmethod
    def parse(cls, url: str) -> ProxyURL:
        """``http://[user:pass@]host[:port]``, ``https://...`` or ``socks5://...``; a clear
        ProxyURLError for anything else (``socks5h``, ``socks4``, no host, a bad port)."""
        try:
            parts = urlsplit(str(url).strip())
            port = parts.port
        except ValueError as exc:
            raise ProxyURLError(f"{url!r} is not a valid proxy URL ({exc})") from exc
        scheme = parts.scheme.lower()
        if scheme not in PROXY_SCHEMES:
            raise ProxyURLError(
                f"{_redacted(url)!r}: the proxy scheme must be one of {', '.join(PROXY_SCHEMES)}"
            )
        if not parts.hostname:
            raise ProxyURLError(f"{_redacted(url)!r}: the proxy URL has no host")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ProxyURLError(f"{_redacted(url)!r}: a proxy URL is scheme://[user:pass@]host:port only")
        return cls(
            scheme, parts.hostname, port or _DEFAULT_PORTS[scheme],
            unquote(parts.username) if parts.username is not None else None,
            unquote(parts.password) if parts.password is not None else None,
        )

    @property
    def redacted(self) -> str:
        """The URL without its credentials, for logs."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    async def open_tunnel(self, host: str, port: int, timeout: float):  # type: ignore[no-untyped-def]  # noqa: ASYNC109 (python-socks applies it)
        """A byte stream to ``host:port`` through this proxy (HTTP CONNECT, over TLS for an https
        proxy, or a SOCKS5 handshake): python-socks speaks all three; it returns a stream with
        ``read``, ``write`` and ``close``."""
        from python_socks import ProxyType
        from python_socks.async_.asyncio.v2 import Proxy

        kind = ProxyType.SOCKS5 if self.scheme == "socks5" else ProxyType.HTTP
        proxy = Proxy(
            kind, self.host, self.port, self.username, self.password,
            proxy_ssl=ssl.create_default_context() if self.scheme == "https" else None,
        )
        return await proxy.connect(dest_host=host, dest_port=port, timeout=timeout)


def _redacted(url: str) -> str:
    try:
        parts = urlsplit(str(url))
        if parts.password is not None or parts.username is not None:
            return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
    except ValueError:
        pass
    return str(url)
