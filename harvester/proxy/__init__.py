"""Outbound proxies: ``HARVESTER_PROXY`` and ``HARVESTER_PROXY_MODE`` for Scrapy's requests and the browser.

Modes:

- ``none``: every connection is direct.
- ``fallback``: direct first; a request whose direct attempt ended in a network error, a timeout,
  403, 429 or 5xx is sent once more through the proxy (``harvester/proxy/middleware.py``). The
  browser's GuardProxy tries the direct connection and, when it cannot be made, the upstream.
- ``proxy``: every connection goes through the proxy (``HARVESTER_PROXY`` is then required).
- ``direct``: an old name of ``proxy``, accepted with a deprecation warning.

The browser always goes through a GuardProxy (the SSRF guard at the socket); these modes only say
whether that GuardProxy chains to ``HARVESTER_PROXY``: see ``browser_upstream`` and
``browser_guard_proxy``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from harvester.proxy.upstream import PROXY_SCHEMES, ProxyURL, ProxyURLError

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from harvester.proxy.guard_proxy import GuardProxy

__all__ = [
    "BROWSER_ARGS",
    "MODES",
    "PROXY_SCHEMES",
    "ProxySettingsError",
    "ProxyURL",
    "ProxyURLError",
    "browser_guard_proxy",
    "browser_upstream",
    "playwright_proxy",
    "proxy_settings",
]

logger = logging.getLogger(__name__)

MODES = ("none", "fallback", "proxy")
# Chromium flags for a browser behind the GuardProxy: WebRTC may otherwise send UDP to any address
# a page names, around the proxy.
BROWSER_ARGS = ("--force-webrtc-ip-handling-policy=disable_non_proxied_udp",)
_ALIASES = {"direct": "proxy"}
_warned_aliases: set[str] = set()


class ProxySettingsError(ValueError):
    """``HARVESTER_PROXY`` / ``HARVESTER_PROXY_MODE`` cannot be used."""


def proxy_settings(settings: BaseSettings | dict[str, Any]) -> tuple[str, ProxyURL | None]:
    """The proxy mode (``none``, ``fallback`` or ``proxy``) and the parsed proxy URL.

    ``direct`` becomes ``proxy`` with a deprecation warning (logged once per process). Raises
    ProxySettingsError for an unknown mode, a bad URL, or a mode that needs a proxy without one.
    """
    raw_mode = str(settings.get("HARVESTER_PROXY_MODE") or "none").strip().lower()
    mode = _ALIASES.get(raw_mode, raw_mode)
    if mode not in MODES:
        raise ProxySettingsError(
            f"HARVESTER_PROXY_MODE={raw_mode!r} must be one of {', '.join(MODES)}"
        )
    if raw_mode in _ALIASES and raw_mode not in _warned_aliases:
        _warned_aliases.add(raw_mode)
        logger.warning(
            "HARVESTER_PROXY_MODE=%s is deprecated: it always meant %r (every request through "
            "HARVESTER_PROXY); use HARVESTER_PROXY_MODE=%s", raw_mode, mode, mode,
        )
    text = settings.get("HARVESTER_PROXY")
    try:
        proxy = ProxyURL.parse(text) if text else None
    except ProxyURLError as exc:
        raise ProxySettingsError(f"HARVESTER_PROXY: {exc}") from exc
    if mode != "none" and proxy is None:
        raise ProxySettingsError(
            f"HARVESTER_PROXY_MODE={raw_mode} needs HARVESTER_PROXY (an http://, https:// or "
            "socks5:// URL)"
        )
    return mode, proxy


def browser_upstream(settings: BaseSettings | dict[str, Any]) -> str | None:
    """The proxy the browser's GuardProxy chains to: ``HARVESTER_PROXY`` in the ``proxy`` and
    ``fallback`` modes (in ``fallback`` only after a direct connection failed), else None."""
    mode, proxy = proxy_settings(settings)
    if mode == "none" or proxy is None:
        return None
    return str(settings.get("HARVESTER_PROXY")).strip()


def playwright_proxy(guard_proxy_url: str) -> dict[str, str]:
    """Playwright's ``proxy`` launch option for the GuardProxy. No ``bypass`` on purpose: with
    none that names loopback, Playwright makes Chromium send loopback through the proxy too
    (``<-loopback>``), so the guard sees connections to 127.0.0.0/8 and ::1 as well."""
    return {"server": guard_proxy_url}


def browser_guard_proxy(settings: BaseSettings, **options: Any) -> GuardProxy:
    """A GuardProxy (not started) for the browser, configured from the settings: the allow-list,
    the guard switch, and the upstream with the mode's fallback rule. ``options`` go to GuardProxy
    (``on_event``, ``max_connections``, ``resolve``...)."""
    from harvester.guard.rules import AllowList
    from harvester.proxy.guard_proxy import GuardProxy

    mode, _ = proxy_settings(settings)
    return GuardProxy(
        AllowList.parse(settings.getlist("HARVESTER_ALLOWED_HOSTS")),
        browser_upstream(settings),
        fallback=mode == "fallback",
        check=settings.getbool("HARVESTER_SSRF_GUARD_ENABLED", True),
        **options,
    )
