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

One resolver serves every crawler of a process, so it judges host names by the process's settings
(``scrapy crawl``: the project settings and ``-s``), not by each crawler's: a crawler given another
``HARVESTER_ALLOWED_HOSTS`` (in a script that runs several crawlers with ``CrawlerProcess``) gets
its IP literals judged by its own list and its host names by the process's, and
``SSRFGuardMiddleware`` says so when the crawl opens. A resolver installed over an earlier one (a
second crawler process in one Python process) replaces it: it resolves through what the earlier
one resolved through, never through its judgement, and starts a new table of refusals.
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
    from typing import Self

    from twisted.internet.interfaces import IAddress, IHostResolution

logger = logging.getLogger(__name__)

# Host name -> (refused address, reason), for the downloader middleware to tell a refusal from a
# name that does not exist. One resolver serves the whole process, so this is process-wide too; it
# is emptied when a resolver is installed.
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

    def __init__(self, reactor: Any, upstream: Any, allow: AllowList, enabled: bool = True,
                 allowed_hosts: Sequence[str] = ()) -> None:
        self.reactor = reactor
        # What this resolver is installed over (an earlier GuardedResolver is seen through).
        self.replaced = _unguarded(getattr(reactor, "nameResolver", None))
        self.upstream = upstream
        self.allow = allow
        self.enabled = enabled
        # The setting as given, for SSRFGuardMiddleware to compare a crawler's with (`allow` also
        # gains the proxies the proxy middleware trusts).
        self.allowed_hosts = tuple(allowed_hosts)

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> Self:
        # `crawler` is the CrawlerProcess here and its settings lack the add-on's defaults, hence
        # the explicit fallbacks.
        settings = crawler.settings
        allowed_hosts = settings.getlist("HARVESTER_ALLOWED_HOSTS", [])
        return cls(
            reactor,
            cls.build_upstream(crawler, reactor),
            AllowList.parse(allowed_hosts),
            settings.getbool("HARVESTER_SSRF_GUARD_ENABLED", True),
            allowed_hosts,
        )

    @classmethod
    def build_upstream(cls, crawler: Any, reactor: Any) -> Any:
        upstream = CachingHostnameResolver.from_crawler(crawler, reactor)
        # Scrapy's caching resolver wraps whatever the reactor has installed.
        upstream.original_resolver = _unguarded(upstream.original_resolver)
        return upstream

    def install_on_reactor(self) -> None:
        REFUSED_HOSTS.clear()
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


def _unguarded(resolver: Any) -> Any:
    """``resolver``, or the one below it when it is a GuardedResolver (followed down)."""
    while isinstance(resolver, GuardedResolver):
        resolver = resolver.replaced
    return resolver


def installed_resolver() -> GuardedResolver | None:
    """The GuardedResolver of the running process, or None: no reactor (Scrapy's reactorless mode),
    or another resolver (a script that starts crawls with ``CrawlerRunner`` installs none)."""
    from scrapy.utils.reactor import is_reactor_installed

    if not is_reactor_installed():
        return None
    from twisted.internet import reactor

    resolver = getattr(reactor, "nameResolver", None)
    return resolver if isinstance(resolver, GuardedResolver) else None
