"""Check Harvester's settings before a crawl starts, so a typo stops the run with one clear line.

Components also refuse bad values (``NotConfigured``), but a disabled embedding or index step would
let a crawl run for an hour and store nothing; the crawl command refuses to start instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from harvester.embedding.models import BACKENDS
from harvester.guard.rules import AllowList, GuardError
from harvester.proxy import ProxySettingsError, proxy_settings
from harvester.sites.loader import WAIT_UNTIL
from harvester.urls.rules import check_css, compile_patterns

CONVERTERS = ("markdownify", "html-to-markdown")

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

MINIMUMS: dict[str, int] = {
    "HARVESTER_EMBEDDING_BATCH_SIZE": 1,
    "HARVESTER_EMBEDDING_CACHE_SIZE": 0,
    "HARVESTER_EMBEDDING_THREADS": 0,
    "HARVESTER_QDRANT_BATCH_SIZE": 1,
    "HARVESTER_SITE_MAX_DEPTH": 0,
    "HARVESTER_MAX_PAGES": 0,
    "HARVESTER_CHUNK_MAX_TOKENS": 0,
    "HARVESTER_CHUNK_OVERLAP_TOKENS": 0,
    "HARVESTER_EXTRACTION_MIN_CHARS": 0,
    "HARVESTER_TRAP_MAX_SEGMENT_REPEATS": 1,
    "HARVESTER_TRAP_MAX_DATE_VARIANTS": 1,
    "HARVESTER_TRAP_MAX_QUERY_VARIANTS": 1,
    "HARVESTER_MAX_PAGES_PER_HOST": 0,
    "HARVESTER_RENDER_LEARN_AFTER": 0,
    "HARVESTER_RENDER_CONCURRENCY": 1,
    "HARVESTER_RENDER_TIMEOUT_MS": 1,
}
FLAGS = (
    "HARVESTER_EXTRACTION_ENABLED", "HARVESTER_DEDUP_ENABLED", "HARVESTER_CHUNKING_ENABLED",
    "HARVESTER_EMBEDDING_ENABLED", "HARVESTER_INDEX_ENABLED", "HARVESTER_REPORT_ENABLED",
    "HARVESTER_CRAWL_DELAY_ENABLED", "ROBOTSTXT_OBEY", "AUTOTHROTTLE_ENABLED",
    "HARVESTER_DEDUP_FEED_DUPLICATES",
    "HARVESTER_SSRF_GUARD_ENABLED", "HARVESTER_TRAP_DETECTION_ENABLED",
    "HARVESTER_PROCESS_IFRAMES", "HARVESTER_FALLBACK_ENABLED", "HARVESTER_FALLBACK_ON_EMPTY",
    "HARVESTER_FALLBACK_ON_BLOCKED", "HARVESTER_PDF_ENABLED",
)


class InvalidSettings(ValueError):
    """A setting has a value Harvester cannot run with."""


def check_settings(settings: BaseSettings) -> None:
    """Raise InvalidSettings naming the first setting that is wrong."""
    for name in FLAGS:
        _get(settings, name, settings.getbool, "true or false")
    for name, minimum in MINIMUMS.items():
        value = _get(settings, name, settings.getint, "an integer")
        if value < minimum:
            raise InvalidSettings(f"{name}={value!r} must be at least {minimum}")
    if _get(settings, "HARVESTER_CRAWL_DELAY_MAX", settings.getfloat, "a number") < 0:
        raise InvalidSettings("HARVESTER_CRAWL_DELAY_MAX must not be negative")
    try:
        compile_patterns(settings.getlist("HARVESTER_SKIP_URL_PATTERNS"))
    except ValueError as exc:
        raise InvalidSettings(f"HARVESTER_SKIP_URL_PATTERNS: {exc}") from exc
    if settings.getbool("HARVESTER_INDEX_ENABLED") and not settings.getbool("HARVESTER_EMBEDDING_ENABLED"):
        raise InvalidSettings(
            "HARVESTER_INDEX_ENABLED needs HARVESTER_EMBEDDING_ENABLED (turn both off to crawl without an index)"
        )
    if settings.getbool("HARVESTER_EMBEDDING_ENABLED") and not settings.getbool("HARVESTER_CHUNKING_ENABLED"):
        raise InvalidSettings("HARVESTER_EMBEDDING_ENABLED needs HARVESTER_CHUNKING_ENABLED: chunks are what is embedded")
    _check_extraction(settings)
    _check_dedup(settings)
    _check_render(settings)
    _check_site_profiles(settings)
    try:
        AllowList.parse(settings.getlist("HARVESTER_ALLOWED_HOSTS"))
    except GuardError as exc:
        raise InvalidSettings(str(exc)) from exc
    try:
        proxy_settings(settings)
    except ProxySettingsError as exc:
        raise InvalidSettings(str(exc)) from exc
    backend = settings.get("HARVESTER_EMBEDDING_BACKEND")
    if backend not in BACKENDS:
        raise InvalidSettings(f"HARVESTER_EMBEDDING_BACKEND={backend!r} must be one of {BACKENDS}")
    url = settings.get("QDRANT_URL")
    if url and urlsplit(url).scheme not in ("http", "https"):
        raise InvalidSettings(f"QDRANT_URL={url!r} must be an http:// or https:// URL")
    if not settings.get("QDRANT_URL") and not settings.get("HARVESTER_QDRANT_PATH"):
        raise InvalidSettings("set HARVESTER_QDRANT_PATH (local store) or QDRANT_URL (server)")
    if _get(settings, "HARVESTER_CLUSTER", settings.getbool, "true or false"):
        # Imported here: harvester.cluster imports this module.
        from harvester.cluster import check_cluster_settings

        check_cluster_settings(settings)


def _check_extraction(settings: BaseSettings) -> None:
    converter = settings.get("HARVESTER_MARKDOWN_CONVERTER")
    if converter not in CONVERTERS:
        raise InvalidSettings(f"HARVESTER_MARKDOWN_CONVERTER={converter!r} must be one of {CONVERTERS}")
    threshold = _get(settings, "HARVESTER_LOW_QUALITY_THRESHOLD", settings.getfloat, "a number")
    if not 0 <= threshold <= 1:
        raise InvalidSettings("HARVESTER_LOW_QUALITY_THRESHOLD must be between 0 and 1")
    selectors = _get(settings, "HARVESTER_CONTENT_SELECTORS", settings.getdict, "a JSON object")
    for selector in [settings.get("HARVESTER_CONTENT_SELECTOR"), *selectors.values()]:
        try:
            if selector:
                check_css(str(selector))
        except ValueError as exc:
            raise InvalidSettings(f"HARVESTER_CONTENT_SELECTOR(S): {exc}") from exc


def _get(settings: BaseSettings, name: str, getter, kind: str):  # type: ignore[no-untyped-def]
    try:
        return getter(name)
    except (TypeError, ValueError) as exc:
        raise InvalidSettings(f"{name}={settings.get(name)!r} must be {kind}") from exc


def _check_dedup(settings: BaseSettings) -> None:
    from harvester.dedup.detect import VersionRule
    from harvester.urls.canonical import compile_strip_params

    threshold = _get(settings, "HARVESTER_NEAR_DUPLICATE_THRESHOLD", settings.getfloat, "a number")
    if not 0 <= threshold <= 1:
        raise InvalidSettings("HARVESTER_NEAR_DUPLICATE_THRESHOLD must be between 0 (off) and 1")
    for name, allowed in (("HARVESTER_NEAR_DUPLICATE_MODE", ("keep", "drop")),
                          ("HARVESTER_BOILERPLATE_MODE", ("once", "drop", "off"))):
        if settings.get(name) not in allowed:
            raise InvalidSettings(f"{name}={settings.get(name)!r} must be one of {allowed}")
    if _get(settings, "HARVESTER_NEAR_DUPLICATE_SHINGLE", settings.getint, "an integer") < 1:
        raise InvalidSettings("HARVESTER_NEAR_DUPLICATE_SHINGLE must be at least 1")
    share = _get(settings, "HARVESTER_BOILERPLATE_SHARE", settings.getfloat, "a number")
    if not 0 < share <= 1:
        raise InvalidSettings("HARVESTER_BOILERPLATE_SHARE must be above 0 and at most 1")
    if _get(settings, "HARVESTER_BOILERPLATE_MIN_PAGES", settings.getint, "an integer") < 2:
        raise InvalidSettings("HARVESTER_BOILERPLATE_MIN_PAGES must be at least 2")
    try:
        compile_strip_params(settings.getlist("HARVESTER_URL_STRIP_PARAMS"))
        VersionRule(settings.get("HARVESTER_VERSION_PATTERN"))
    except ValueError as exc:
        raise InvalidSettings(f"HARVESTER_URL_STRIP_PARAMS / HARVESTER_VERSION_PATTERN: {exc}") from exc


def _check_site_profiles(settings: BaseSettings) -> None:
    """The settings profiles resolve against, and every profile file (harvester/sites)."""
    from harvester.sites import ProfileError, check_site_profiles

    # HARVESTER_RENDER, _WAIT_UNTIL and _DELAY are checked by _check_render.
    if _get(settings, "DOWNLOAD_DELAY", settings.getfloat, "a number") < 0:
        raise InvalidSettings("DOWNLOAD_DELAY must not be negative")
    try:
        check_site_profiles(settings)
    except ProfileError as exc:
        raise InvalidSettings(str(exc)) from exc


def _check_render(settings: BaseSettings) -> None:
    from harvester.render.browser import browser_args
    from harvester.render.middleware import render_problem
    from harvester.sites import RENDER_MODES

    mode = settings.get("HARVESTER_RENDER")
    if mode not in RENDER_MODES:
        raise InvalidSettings(f"HARVESTER_RENDER={mode!r} must be one of {RENDER_MODES}")
    wait_until = settings.get("HARVESTER_RENDER_WAIT_UNTIL")
    if wait_until not in WAIT_UNTIL:
        raise InvalidSettings(f"HARVESTER_RENDER_WAIT_UNTIL={wait_until!r} must be one of {WAIT_UNTIL}")
    if _get(settings, "HARVESTER_RENDER_DELAY", settings.getfloat, "a number") < 0:
        raise InvalidSettings("HARVESTER_RENDER_DELAY must not be negative")
    try:
        browser_args(settings.get("HARVESTER_BROWSER_ARGS"))
    except ValueError as exc:
        raise InvalidSettings(f"HARVESTER_BROWSER_ARGS: {exc} (give a JSON list or shell-quoted arguments)") from exc
    if mode == "always":
        problem = render_problem(settings)
        if problem is not None:
            raise InvalidSettings(f"HARVESTER_RENDER=always, but {problem}")
