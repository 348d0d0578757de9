"""Outbound proxy modes for Scrapy's requests: ``HARVESTER_PROXY`` with ``HARVESTER_PROXY_MODE``.

``proxy`` sends every request through the proxy; ``fallback`` sends a request directly and, after a
network error, a timeout, 403, 429 or 5xx, once more through the proxy. http and https proxies are
Scrapy's own (``request.meta["proxy"]``; HttpProxyMiddleware sends the URL's credentials). Scrapy
cannot speak SOCKS5, nor TLS to a proxy for an https target, so a socks5 or https proxy is reached
through a local GuardProxy chained to it.

The SSRF guard and a proxy: a proxied request's target is resolved by the proxy, out of sight of
Harvester's resolver. So before a request is proxied its host is resolved here, through that same
guarded resolver (cached, so no extra query in the usual case): a name whose every address is
refused is refused by SSRFGuardMiddleware as if it were direct, and never reaches the proxy. An
http proxy then resolves the name again, and DNS rebinding could answer it differently; a socks5
or https proxy does not have that gap, because the local GuardProxy hands it the address it
checked. A name that does not resolve here at all is left to the proxy (it may resolve names this
machine cannot).
"""

from __future__ import annotations

import ipaddress
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.exceptions import DownloadTimeoutError, IgnoreRequest, NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.misc import load_object
from scrapy.utils.reactor import is_reactor_installed
from twisted.internet.defer import Deferred
from twisted.internet.defer import TimeoutError as DeferTimeoutError
from twisted.internet.error import TCPTimedOutError
from twisted.internet.error import TimeoutError as TwistedTimeoutError
from twisted.internet.interfaces import IResolutionReceiver
from zope.interface import provider

from harvester.guard.resolver import REFUSED_HOSTS, installed_resolver
from harvester.guard.rules import AllowList, parse_ip, url_refusal
from harvester.meta import PROXIED, PROXY_FALLBACK
from harvester.proxy import ProxySettingsError, proxy_settings
from harvester.urls.hosts import host_name

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from harvester.proxy.guard_proxy import GuardProxy

logger = logging.getLogger(__name__)

FALLBACK_STATUSES = {403, 429}
_TIMEOUTS = (TwistedTimeoutError, TCPTimedOutError, DeferTimeoutError, TimeoutError, DownloadTimeoutError)


class ProxyModeMiddleware:
    """Routes requests through ``HARVESTER_PROXY`` by ``HARVESTER_PROXY_MODE``.

    Placed at 557, and each neighbour is there on purpose:
    - below HttpProxyMiddleware (750), which must see the ``meta["proxy"]`` set here;
    - below SSRFGuardMiddleware (560) for requests, so the guarded resolution made here for a
      proxied request is what the guard judges next; and above it for responses and exceptions,
      so a refusal the guard raises ends the chain before a fallback could send it anywhere;
    - above RetryAfterMiddleware (555) and RetryMiddleware (550) for responses and exceptions, so a
      fallback happens at the first failure instead of after the direct retries are spent, and a
      proxied request that fails is retried by them as usual.
    Requests that carry their own ``meta["proxy"]`` (or ``dont_proxy``) are left alone.

    Stats: ``harvester/proxy/direct``, ``harvester/proxy/proxied``,
    ``harvester/proxy/fallback/<reason>`` (``http_403``, ``http_503``, ``timeout``,
    ``network_error``...), and through a GuardProxy ``harvester/proxy/guard_proxy/<event>``.
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        try:
            self.mode, self.proxy = proxy_settings(settings)
        except ProxySettingsError as exc:  # the crawl command refuses these before a crawl
            raise NotConfigured(str(exc)) from exc
        if self.mode == "none" or self.proxy is None:
            raise NotConfigured
        self.crawler = crawler
        self.guard_enabled = settings.getbool("HARVESTER_SSRF_GUARD_ENABLED")
        self.allow = AllowList.parse(settings.getlist("HARVESTER_ALLOWED_HOSTS"))
        self.dns_timeout = settings.getfloat("DNS_TIMEOUT") or 60.0
        self.retry_exceptions = tuple(load_object(path) if isinstance(path, str) else path
                                      for path in settings.getlist("RETRY_EXCEPTIONS"))
        self.guard_proxy: GuardProxy | None = None
        self.proxy_url = str(settings.get("HARVESTER_PROXY")).strip()
        # Scrapy speaks neither SOCKS5 nor TLS to a proxy for an https target (its HTTP/1.1
        # handler raises NotImplementedError); the GuardProxy speaks both.
        if self.proxy.scheme in ("socks5", "https"):
            from harvester.proxy.guard_proxy import GuardProxy

            self.guard_proxy = GuardProxy(self.allow, self.proxy_url, check=self.guard_enabled)
            self.proxy_url = self.guard_proxy.start()
            _trust_proxy_host("127.0.0.1", int(self.proxy_url.rsplit(":", 1)[1]))
            crawler.signals.connect(self._stop_guard_proxy, signal=signals.spider_closed)
        else:
            _trust_proxy_host(self.proxy.host, self.proxy.port)
        self._fallback_hosts: set[str] = set()
        self._unresolvable: set[str] = set()
        logger.info("Proxy mode %s through %s", self.mode, self.proxy.redacted)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        meta = request.meta
        if meta.get("dont_proxy") or ("proxy" in meta and meta.get(PROXIED) != meta["proxy"]):
            return
        if self.mode == "fallback" and PROXY_FALLBACK not in meta:
            self.crawler.stats.inc_value("harvester/proxy/direct")
            return
        if self.guard_enabled and not await self._passes_guard(request.url):
            return  # SSRFGuardMiddleware, next, refuses it; it never goes to the proxy
        meta["proxy"] = meta[PROXIED] = self.proxy_url
        self.crawler.stats.inc_value("harvester/proxy/proxied")

    def process_response(self, request: Request, response: Response) -> Request | Response:
        status = response.status
        if status in FALLBACK_STATUSES or 500 <= status < 600:
            return self._fallback(request, f"http_{status}") or response
        return response

    def process_exception(self, request: Request, exception: Exception) -> Request | None:
        if isinstance(exception, IgnoreRequest) or not isinstance(exception, self.retry_exceptions):
            return None  # refusals, robots.txt and other decisions are not network failures
        if host_name(request.url) in REFUSED_HOSTS:
            return None  # a DNS error that is really the guard's refusal
        return self._fallback(request, "timeout" if isinstance(exception, _TIMEOUTS) else "network_error")

    def _fallback(self, request: Request, reason: str) -> Request | None:
        meta = request.meta
        if self.mode != "fallback" or PROXY_FALLBACK in meta or meta.get("dont_proxy") or "proxy" in meta:
            return None
        stats = self.crawler.stats
        stats.inc_value("harvester/proxy/fallback")
        stats.inc_value(f"harvester/proxy/fallback/{reason}")
        host = host_name(request.url)
        if host not in self._fallback_hosts:
            self._fallback_hosts.add(host)
            logger.info("Direct request to %s failed (%s): trying again through the proxy %s "
                        "(logged once per host)", host, reason, self.proxy.redacted if self.proxy else "")
        retry = request.replace(dont_filter=True)
        retry.meta[PROXY_FALLBACK] = reason
        return retry

    async def _passes_guard(self, url: str) -> bool:
        """False when the guard will refuse ``url``: by its text, or because its name resolves only
        to refused addresses (the guarded resolver records those in REFUSED_HOSTS)."""
        if url_refusal(url, self.allow) is not None:
            return False
        host = host_name(url)
        if host in REFUSED_HOSTS:
            return False
        if parse_ip(host) is not None or host in self._unresolvable or not is_reactor_installed():
            return True  # no Twisted reactor: the aiohttp download path, with the text check only
        from twisted.internet import reactor

        resolution: Deferred[None] = Deferred()
        resolution.addTimeout(self.dns_timeout, reactor)
        completion = _Completion(resolution)
        try:
            reactor.nameResolver.resolveHostName(completion, host, _port(url))
            await maybe_deferred_to_future(resolution)
        except Exception:  # a name that does not resolve here is the proxy's to resolve
            logger.debug("Could not resolve %s before proxying it", host, exc_info=True)
        if host in REFUSED_HOSTS:
            return False
        if not completion.addresses:
            # Not asked again: where this machine has no DNS for it, every request would wait.
            self._unresolvable.add(host)
        return True

    def _stop_guard_proxy(self) -> None:
        if self.guard_proxy is not None:
            for event, count in self.guard_proxy.counts.items():
                self.crawler.stats.set_value(f"harvester/proxy/guard_proxy/{event}", count)
            self.guard_proxy.stop()


@provider(IResolutionReceiver)
class _Completion:
    """Fires a Deferred when a resolution completes; the addresses themselves are not needed."""

    def __init__(self, done: Deferred[None]) -> None:
        self.done = done
        self.addresses = 0

    def resolutionBegan(self, resolution: Any) -> None:  # Twisted's interface names
        pass

    def addressResolved(self, address: Any) -> None:
        self.addresses += 1

    def resolutionComplete(self) -> None:
        if not self.done.called:
            self.done.callback(None)


def _port(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)


def _trust_proxy_host(host: str, port: int) -> None:
    """Let the guarded resolver hand out the proxy's own address even when it is private: the
    user configured the proxy. Scrapy reaches an http proxy through a HostnameEndpoint (asked
    with the proxy's port) and tunnels to an https target through a TCP4ClientEndpoint (asked
    with port 0), so the proxy is trusted at those two ports only. A crawl target at the proxy's
    own host and port would pass the resolver too: it is the user's proxy."""
    resolver = installed_resolver()
    if resolver is None:
        return
    address = parse_ip(host)
    if address is None:
        resolver.allow.names.setdefault(host.lower().rstrip("."), set()).update({0, port})
    else:
        resolver.allow.networks += [(ipaddress.ip_network(address), 0), (ipaddress.ip_network(address), port)]
