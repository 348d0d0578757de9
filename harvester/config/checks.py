"""Check Harvester's settings before a crawl starts, so a typo stops the run with one clear line.

Every setting's type and range comes from the spec (``harvester.config.spec``); the rules that
tie several settings together, and the ones that need a feature's own code (site profile files,
proxies, a browser for ``render=always``, cluster mode), are here. The add-on runs the checks for
every crawler, however it was started (``scrapy crawl``, ``runspider``, a script, Scrapyd).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvester.config.spec import SPEC
from harvester.exceptions import InvalidSettings

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["InvalidSettings", "check_settings"]


def check_settings(settings: BaseSettings) -> None:
    """Raise InvalidSettings naming the first setting that is wrong."""
    for setting in SPEC:
        value = settings.get(setting.name)
        try:
            setting.type.parse(value)
        except ValueError as exc:
            message = str(exc)
            if message.startswith(setting.name):  # the rule's own message names the setting
                raise InvalidSettings(message) from exc
            if message.startswith("must"):
                raise InvalidSettings(f"{setting.name}={value!r} {message}") from exc
            raise InvalidSettings(f"{setting.name}: {message}") from exc
    _check_pipeline(settings)
    _check_site_profiles(settings)
    _check_proxy(settings)
    _check_render(settings)
    if settings.getbool("HARVESTER_CLUSTER"):
        from harvester.cluster import check_cluster_settings

        check_cluster_settings(settings)


def _check_pipeline(settings: BaseSettings) -> None:
    if settings.getbool("HARVESTER_INDEX_ENABLED") and not settings.getbool("HARVESTER_EMBEDDING_ENABLED"):
        raise InvalidSettings(
            "HARVESTER_INDEX_ENABLED needs HARVESTER_EMBEDDING_ENABLED (turn both off to crawl without an index)"
        )
    if settings.getbool("HARVESTER_EMBEDDING_ENABLED") and not settings.getbool("HARVESTER_CHUNKING_ENABLED"):
        raise InvalidSettings("HARVESTER_EMBEDDING_ENABLED needs HARVESTER_CHUNKING_ENABLED: chunks are what is embedded")
    if not settings.get("QDRANT_URL") and not settings.get("HARVESTER_QDRANT_PATH"):
        raise InvalidSettings("set HARVESTER_QDRANT_PATH (local store) or QDRANT_URL (server)")


def _check_site_profiles(settings: BaseSettings) -> None:
    """Every profile file the settings name (harvester/sites)."""
    from harvester.sites import ProfileError, check_site_profiles

    try:
        check_site_profiles(settings)
    except ProfileError as exc:
        raise InvalidSettings(str(exc)) from exc


def _check_proxy(settings: BaseSettings) -> None:
    from harvester.proxy import ProxySettingsError, proxy_settings

    try:
        proxy_settings(settings)
    except ProxySettingsError as exc:
        raise InvalidSettings(str(exc)) from exc


def _check_render(settings: BaseSettings) -> None:
    if settings.get("HARVESTER_RENDER") == "always":
        from harvester.render.middleware import render_problem

        problem = render_problem(settings)
        if problem is not None:
            raise InvalidSettings(f"HARVESTER_RENDER=always, but {problem}")
