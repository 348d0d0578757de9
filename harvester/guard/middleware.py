"""The SSRF guard on every request: scheme and IP-literal host checks, and the resolver's refusals.

Every request passes through the downloader middlewares, including each redirect hop
(RedirectMiddleware returns a new request that is scheduled again), ``<meta http-equiv="refresh">``
targets (MetaRefreshMiddleware does the same), sitemap entries, extracted links and robots.txt, so
one downloader middleware sees them all before a connection is made.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import CannotResolveHostError, NotConfigured
from twisted.internet.error import DNSLookupError

from harvester.exceptions import RequestRefused
from harvester.guard.resolver import REFUSED_HOSTS, installed_resolver
from harvester.guard.rules import AllowList, GuardError, url_refusal
from harvester.meta import is_reported_request
from harvester.signals import host_refused, page_skipped
from harvester.urls.hosts import host_name

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)


class SSRFGuardMiddleware:
    """Refuses requests whose scheme is not http(s) or whose host is an IP literal (in any
    spelling) outside the public internet, and turns the resolver's refusals (a host name whose
    every address is private) into the same refusal instead of a DNS error.

    Placed above RetryMiddleware, so a refused name is not retried.
    Settings: ``HARVESTER_SSRF_GUARD_ENABLED``, ``HARVESTER_ALLOWED_HOSTS``.
    Stats: ``harvester/guard/refused``, ``harvester/guard/refused/<reason>``.
    Signals sent: ``host_refused`` (once per host), ``page_skipped`` (reason ``ssrf_refused``).
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        _check_resolver(settings)
        if not settings.getbool("HARVESTER_SSRF_GUARD_ENABLED"):
            raise NotConfigured
        try:
            self.allow = AllowList.parse(settings.getlist("HARVESTER_ALLOWED_HOSTS"))
        except GuardError as exc:
            raise NotConfigured(str(exc)) from exc
        self.crawler = crawler
        self._told: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        reason = url_refusal(request.url, self.allow)
        host = host_name(request.url)
        if reason is None and host in REFUSED_HOSTS:
            reason = REFUSED_HOSTS[host][1]
        if reason is not None:
            self._refuse(request, request.url, host, reason)

    def process_response(self, request: Request, response: Response) -> Response:
        if response.url != request.url:
            reason = url_refusal(response.url, self.allow)
            if reason is not None:
                self._refuse(request, response.url, host_name(response.url), reason)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        if isinstance(exception, (CannotResolveHostError, DNSLookupError)):
            host = host_name(request.url)
            if host in REFUSED_HOSTS:
                self._refuse(request, request.url, host, REFUSED_HOSTS[host][1])

    def _refuse(self, request: Request, url: str, host: str, reason: str) -> None:
        stats = self.crawler.stats
        stats.inc_value("harvester/guard/refused")
        stats.inc_value(f"harvester/guard/refused/{reason}")
        if host not in self._told:
            self._told.add(host)
            where = f" at {REFUSED_HOSTS[host][0]}" if host in REFUSED_HOSTS else ""
            logger.warning(
                "Refused to connect to %s%s (%s): not a public internet address. Allow it with "
                "HARVESTER_ALLOWED_HOSTS if you trust it.", host or url, where, reason,
            )
            self.crawler.signals.send_catch_log(host_refused, host=host, reason=reason)
        if is_reported_request(request):
            self.crawler.signals.send_catch_log(page_skipped, url=url, reason="ssrf_refused")
        raise RequestRefused(url, host, reason)


def _check_resolver(settings: BaseSettings) -> None:
    """Say when host names are not judged by this crawler's guard settings: the name resolver is
    one per process, built from the process's settings (harvester/guard/resolver.py)."""
    enabled = settings.getbool("HARVESTER_SSRF_GUARD_ENABLED")
    resolver = installed_resolver()
    if resolver is None:
        if enabled:
            logger.warning(
                "Host names are not checked at the socket: the process has no Harvester name "
                "resolver (scrapy crawl and CrawlerProcess install it from TWISTED_DNS_RESOLVER; "
                "CrawlerRunner and the reactorless mode do not). Only IP literals are refused."
            )
        return
    allowed = list(settings.getlist("HARVESTER_ALLOWED_HOSTS"))
    if resolver.enabled != enabled or list(resolver.allowed_hosts) != allowed:
        logger.warning(
            "This crawler's guard settings (HARVESTER_SSRF_GUARD_ENABLED=%s, HARVESTER_ALLOWED_HOSTS=%s) "
            "differ from the process's (%s, %s): the name resolver serves the whole process, so host "
            "names are judged by the process's settings and IP literals by this crawler's. Set them "
            "in the project settings or with -s.",
            enabled, allowed, resolver.enabled, list(resolver.allowed_hosts),
        )
