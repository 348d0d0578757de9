"""Per-site profiles: the settings a crawl uses for the pages of one site.

A profile is a TOML file keyed by domain or URL pattern (shipped ones in this package, a user
directory via ``HARVESTER_SITE_PROFILES_DIR``). Only the keys in ``PROFILE_KEYS`` are taken.
Precedence: Harvester's defaults < the matching profile < settings a user set (any priority above
the add-on's: settings modules, environment, ``-s``) and spider arguments (``-a``).

Components ask ``SiteProfiles.from_crawler(crawler).for_url(url)`` and read the resolved
``SiteProfile``; none of them reads the profile files. The file format and the matching rules are
in ``harvester.sites.loader``.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from scrapy.settings import SETTINGS_PRIORITIES

from harvester.config.spec import PROFILE_SETTINGS, RENDER_MODES, SETTINGS
from harvester.config.types import Bool, Float, Int, Optional
from harvester.sites.loader import ProfileError, ProfileMatcher, SiteProfileFile, load_profiles
from harvester.state import crawl_state

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

__all__ = ["PROFILE_KEYS", "RENDER_MODES", "ProfileError", "SiteProfile", "SiteProfiles",
           "check_site_profiles", "shipped_profiles"]

# Profile key -> the setting that gives its default (and overrides it when a user set it), from the
# settings spec. ``allow`` and ``deny`` have no setting: only the spider arguments of the same names
# override them.
PROFILE_KEYS: dict[str, str | None] = {**PROFILE_SETTINGS, "allow": None, "deny": None}

# Settings up to this priority are Harvester's (or Scrapy's) defaults, which a profile overrides.
_DEFAULTS_PRIORITY = SETTINGS_PRIORITIES["addon"]


# Each profile key's default: its setting's, from the spec.
_DEFAULTS: dict[str, Any] = {key: SETTINGS[name].default for key, name in PROFILE_SETTINGS.items()}


@dataclass(frozen=True)
class SiteProfile:
    """What a crawl does on one site, every key resolved (defaults, profile, overrides). Built bare,
    it is what a crawl with Harvester's defaults uses on a site without a profile."""

    name: str | None = None  # the profile's file stem, None when no profile matched
    render: str = _DEFAULTS["render"]
    wait_until: str = _DEFAULTS["wait_until"]
    wait_for: str | None = _DEFAULTS["wait_for"]
    delay_before_return_html: float = _DEFAULTS["delay_before_return_html"]
    page_timeout_ms: int = _DEFAULTS["page_timeout_ms"]
    process_iframes: bool = _DEFAULTS["process_iframes"]
    locale: str | None = _DEFAULTS["locale"]
    timezone_id: str | None = _DEFAULTS["timezone_id"]
    user_agent: str | None = _DEFAULTS["user_agent"]
    fallback_enabled: bool = _DEFAULTS["fallback_enabled"]
    fallback_on_empty: bool = _DEFAULTS["fallback_on_empty"]
    fallback_on_blocked: bool = _DEFAULTS["fallback_on_blocked"]
    content_selector: str | None = _DEFAULTS["content_selector"]
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    download_delay: float | None = _DEFAULTS["download_delay"]
    template_learning: bool = _DEFAULTS["template_learning"]


def shipped_profiles() -> list[tuple[str, str]]:
    """``(file name, text)`` of the profiles shipped in this package (also from a zipped egg)."""
    return sorted(
        (entry.name, entry.read_text(encoding="utf-8"))
        for entry in files(__name__).iterdir()
        if entry.name.endswith(".toml")
    )


def check_site_profiles(settings: BaseSettings) -> list[SiteProfileFile]:
    """Load every profile the settings name; ProfileError names the file and key that is wrong."""
    return load_profiles(shipped_profiles(), settings.get("HARVESTER_SITE_PROFILES_DIR") or None)


class SiteProfiles:
    """The profiles of one crawl, and the resolved profile of any URL.

    ``overrides``: profile keys a spider argument set (``allow``, ``deny``), which win over every
    profile. Settings a user set (priority above the add-on's) win too: they are read here.
    """

    def __init__(self, settings: BaseSettings, overrides: dict[str, Any] | None = None) -> None:
        self._settings = _from_settings(settings)
        self._user_set = {
            key for key, name in PROFILE_KEYS.items()
            if name is not None and (settings.getpriority(name) or 0) > _DEFAULTS_PRIORITY
        }
        self._overrides = {k: v for k, v in (overrides or {}).items() if k in PROFILE_KEYS}
        self.profiles = check_site_profiles(settings)
        self._matcher = ProfileMatcher(self.profiles)
        self._resolved: dict[str | None, SiteProfile] = {}
        self._lock = threading.Lock()  # extraction runs in worker threads too
        # host -> the profiles that served its requests (see note_served)
        self.served: dict[str, set[str]] = defaultdict(set)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SiteProfiles:
        """One instance per crawler, shared by every component that asks."""
        state = crawl_state(crawler)
        if state.site_profiles is None:
            overrides = getattr(getattr(crawler, "spider", None), "profile_overrides", None)
            state.site_profiles = cls(crawler.settings, overrides)
        return state.site_profiles

    def for_url(self, url: str) -> SiteProfile:
        """The profile that applies to ``url`` (the defaults when none matches)."""
        profile = self._matcher.match(url)
        name = profile.name if profile is not None else None
        resolved = self._resolved.get(name)
        if resolved is None:
            with self._lock:
                resolved = self._resolved.setdefault(name, self._resolve(profile))
        return resolved

    def has_download_delay(self) -> bool:
        """Whether any profile asks for a download delay that a user setting does not override."""
        return "download_delay" not in self._user_set and any(
            "download_delay" in p.values for p in self.profiles)

    def note_served(self, host: str, profile: SiteProfile) -> None:
        """Record that ``profile`` (a matched one) served a request to ``host``, for the report."""
        if profile.name is not None:
            self.served[host].add(profile.name)

    def _resolve(self, profile: SiteProfileFile | None) -> SiteProfile:
        values = dict(self._settings)
        if profile is not None:
            values["name"] = profile.name
            values.update({key: value for key, value in profile.values.items() if key not in self._user_set})
        values.update(self._overrides)
        return SiteProfile(**values)


def _from_settings(settings: BaseSettings) -> dict[str, Any]:
    """Each profile key's value from its setting, read as the spec types it (booleans always, the
    others when set)."""
    values: dict[str, Any] = {}
    for key, name in PROFILE_SETTINGS.items():
        value_type = SETTINGS[name].type
        if isinstance(value_type, Optional):
            value_type = value_type.inner
        if isinstance(value_type, Bool):
            values[key] = settings.getbool(name)
        elif settings.get(name) in (None, ""):
            continue
        elif isinstance(value_type, Float):
            values[key] = settings.getfloat(name)
        elif isinstance(value_type, Int):
            values[key] = settings.getint(name)
        else:
            values[key] = settings.get(name)
    return values
