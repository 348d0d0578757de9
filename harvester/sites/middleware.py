"""Apply the site profiles (``harvester.sites``) to HTTP requests: their User-Agent, and a record of
which profile served which host."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvester.sites import SiteProfiles
from harvester.urls.hosts import host_key

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler


class SiteProfileMiddleware:
    """Downloader middleware: a profile's ``user_agent`` on each request to its site.

    Ordered before the robots.txt middleware, so robots.txt rules are matched against the
    User-Agent the site is sent. A request that already has a User-Agent keeps it.
    Stats: ``harvester/sites/profile/<name>`` (requests sent under each profile).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.profiles = SiteProfiles.from_crawler(crawler)
        self._default_agent = crawler.settings.get("USER_AGENT")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        profile = self.profiles.for_url(request.url)
        if profile.name is None:
            return
        self.crawler.stats.inc_value(f"harvester/sites/profile/{profile.name}")
        self.profiles.note_served(host_key(request.url), profile)
        if profile.user_agent and profile.user_agent != self._default_agent:
            request.headers.setdefault(b"User-Agent", profile.user_agent)
