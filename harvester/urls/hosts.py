"""The host of a URL, decided here and nowhere else. Scrapy-free.

Two questions, two answers: which site a URL belongs to (``host_key``: host and port, as scope,
per-host counters and caches compare them) and which machine it names (``host_name``: the host
alone, as the SSRF guard, ``allowed_domains`` and site profiles match it).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from w3lib.url import safe_url_string


def host_key(url: str) -> str:
    """The site of ``url``: its host, lower-cased, and its port when the URL names one
    (``example.com:8080``); no user info or IPv6 brackets. ValueError for an invalid port."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    return f"{host}:{parts.port}" if parts.port else host


def host_name(url: str) -> str:
    """The host of ``url``, lower-cased, without port, user info or IPv6 brackets; "" when it has
    none or cannot be parsed."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def request_host_name(host: str) -> str:
    """``host`` as a request's URL carries it: a non-ASCII name in its IDNA form
    (``bücher.example`` is ``xn--bcher-kva.example``), encoded by w3lib as Scrapy's requests are.
    ValueError for a name IDNA refuses."""
    if host.isascii():
        return host.lower()
    return host_name(safe_url_string(f"http://{host}/")) or host.lower()
