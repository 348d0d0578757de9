"""Per-site profiles: the settings a crawl uses for the pages of one site.

A profile is a TOML file keyed by domain or URL pattern (shipped ones in this package, a user
directory via ``HARVESTER_SITE_PROFILES_DIR``). Only the keys in ``PROFILE_KEYS`` are taken.
Precedence: Harvester's defaults < the matching profile < settings a user set (any priority above
the add-on's: settings modules, environment, ``-s``) and spider arguments (``-a``).

Components ask ``SiteProfiles.from_crawler(crawler).for_url(url)`` and read the resolved
``SiteProfile``; none of them reads the profile files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

RENDER_MODES = ("never", "always", "auto")

# Profile key -> the setting that gives its default (and overrides it when a user set it).
# ``allow`` and ``deny`` have no setting: only the spider arguments of the same names override them.
PROFILE_KEYS: dict[str, str | None] = {
    "render": "HARVESTER_RENDER",
    "wait_until": "HARVESTER_RENDER_WAIT_UNTIL",
    "wait_for": "HARVESTER_RENDER_WAIT_FOR",
    "delay_before_return_html": "HARVESTER_RENDER_DELAY",
    "page_timeout_ms": "HARVESTER_RENDER_TIMEOUT_MS",
    "process_iframes": "HARVESTER_PROCESS_IFRAMES",
    "locale": "HARVESTER_BROWSER_LOCALE",
    "timezone_id": "HARVESTER_BROWSER_TIMEZONE",
    "user_agent": "USER_AGENT",
    "fallback_enabled": "HARVESTER_FALLBACK_ENABLED",
    "fallback_on_empty": "HARVESTER_FALLBACK_ON_EMPTY",
    "fallback_on_blocked": "HARVESTER_FALLBACK_ON_BLOCKED",
    "content_selector": "HARVESTER_CONTENT_SELECTOR",
    "allow": None,
    "deny": None,
    "download_delay": "DOWNLOAD_DELAY",
}


@dataclass(frozen=True)
class SiteProfile:
    """What a crawl does on one site, every key resolved (defaults, profile, overrides)."""

    name: str | None = None  # the profile's file stem, None when no profile matched
    render: str = "auto"
    wait_until: str = "load"
    wait_for: str | None = None
    delay_before_return_html: float = 0.0
    page_timeout_ms: int = 30000
    process_iframes: bool = False
    locale: str | None = None
    timezone_id: str | None = None
    user_agent: str | None = None
    fallback_enabled: bool = True
    fallback_on_empty: bool = True
    fallback_on_blocked: bool = False
    content_selector: str | None = None
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    download_delay: float | None = None


class SiteProfiles:
    """The profiles of one crawl, and the resolved profile of any URL."""

    def __init__(self, settings: BaseSettings) -> None:
        self._defaults = SiteProfile(**_from_settings(settings))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SiteProfiles:
        """One instance per crawler, shared by every component that asks."""
        profiles = getattr(crawler, "harvester_site_profiles", None)
        if profiles is None:
            profiles = cls(crawler.settings)
            crawler.harvester_site_profiles = profiles  # type: ignore[attr-defined]
        return profiles

    def for_url(self, url: str) -> SiteProfile:
        """The profile that applies to ``url`` (the defaults when none matches)."""
        return self._defaults


def _from_settings(settings: BaseSettings) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, name in PROFILE_KEYS.items():
        if name is not None and settings.get(name) is not None:
            values[key] = settings.get(name)
    values["process_iframes"] = settings.getbool("HARVESTER_PROCESS_IFRAMES")
    for key in ("fallback_enabled", "fallback_on_empty", "fallback_on_blocked"):
        values[key] = settings.getbool(PROFILE_KEYS[key])  # type: ignore[arg-type]
    return values
