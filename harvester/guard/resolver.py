"""The SSRF guard at the socket: a Twisted name resolver that hands out only checked addresses.

Installed through ``TWISTED_DNS_RESOLVER`` (set by the add-on's ``update_pre_crawler_settings``:
Scrapy installs the resolver for the whole process from the process settings, before any crawler). Scrapy's HTTP
handler connects through Twisted's ``HostnameEndpoint``, which asks ``reactor.nameResolver`` for
the addresses and connects to exactly those, so every address judged here is the address connected
to: no second lookup that DNS rebinding could answer differently. A name whose every address is
refused resolves to nothing, and the connection fails with a DNS error that
``SSRFGuardMiddleware`` turns into a refusal (it reads ``REFUSED_HOSTS``).

A proxy (``HttpProxyMiddleware``) is connected to by its own name outside this resolver: the proxy
is configured by the operator and trusted; it resolves the target itself.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.resolver import CachingHostnameResolver
from scrapy.utils.datatypes import LocalCache
from twisted.internet.interfaces import IHostnameResolver, IResolutionReceiver
from zope.interface import implementer, provider

from harvester.guard.rules import AllowList

if TYPE_CHECKING:
    from collections.abc import Sequence

    from twisted.internet.interfaces import IAddress, IHostResolution
    from typing_extensions import Self

logger = logging.getLogger(__name__)

# Host name -> (refused address, reason), for the downloader middleware to tell a refusal from a
# name that does not exist. One resolver serves the whole process, so this is process-wide too.
REFUSED_HOSTS: LocalCache[str, tuple[str, str]] = LocalCache(10000)


@provider(IResolutionReceiver)
class _CheckingReceiver:
    def __init__(self, receiver: IResolutionReceiver, host: str, port: int, allow: AllowList) -> None:
        self._receiver = receiver
        self._host = host
        self._port = port
        self._allow = allow
        self._passed = 0
        self._refused: tuple[str, str] | None = None

    def resolutionBegan(self, resolution: IHostResolution) -> None:
        self._receiver.resolutionBegan(resolution)

    def addressResolved(self, address: IAddress) -> None:
        reason = self._refusal(getattr(address, "host", ""))
        if reason is None:
            self._passed += 1
            self._receiver.addressResolved(address)
        else:
            self._refused = (getattr(address, "host", "?"), reason)
            logger.debug("Not connecting to %s at %s (%s)", self._host, self._refused[0], reason)

    def resolutionComplete(self) -> None:
        if self._refused and not self._passed:
            REFUSED_HOSTS[self._host.lower()] = self._refused
        self._receiver.resolutionComplete()

    def _refusal(self, text: str) -> str | None:
        return self._allow.resolved_refusal(text, self._port)


@implementer(IHostnameResolver)
class GuardedResolver:
    """Resolves through Scrapy's ``CachingHostnameResolver`` (IPv4 and IPv6, ``DNSCACHE_*``) and
    passes on only the addresses the guard allows.

    Settings (project or command line, read once per process): ``HARVESTER_SSRF_GUARD_ENABLED``,
    ``HARVESTER_ALLOWED_HOSTS``.
    """

    def __init__(self, reactor: Any, upstream: Any, allow: AllowList, enabled: bool = True) -> None:
        self.reactor = reactor
        self.upstream = upstream
        self.allow = allow
        self.enabled = enabled

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> Self:
        # `crawler` is the CrawlerProcess here and its settings lack the add-on's defaults, hence
        # the explicit fallbacks.
        settings = crawler.settings
        return cls(
            reactor,
            cls.build_upstream(crawler, reactor),
            AllowList.parse(settings.getlist("HARVESTER_ALLOWED_HOSTS", [])),
            settings.getbool("HARVESTER_SSRF_GUARD_ENABLED", True),
        )

    @classmethod
    def build_upstream(cls, crawler: Any, reactor: Any) -> Any:
        return CachingHostnameResolver.from_crawler(crawler, reactor)

    def install_on_reactor(self) -> None:
        self.reactor.installNameResolver(self)

    def resolveHostName(
        self,
        resolutionReceiver: IResolutionReceiver,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Sequence[type[IAddress]] | None = None,
        transportSemantics: str = "TCP",
    ) -> IHostResolution:
        if self.enabled and not self.allow.allows_name(hostName, portNumber):
            resolutionReceiver = _CheckingReceiver(resolutionReceiver, hostName, portNumber, self.allow)
        return self.upstream.resolveHostName(
            resolutionReceiver, hostName, portNumber, addressTypes, transportSemantics
        )
