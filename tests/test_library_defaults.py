"""Defaults are stated once, in the settings spec: a library function called without a setting's
value behaves as a crawl with Harvester's defaults does."""

from __future__ import annotations

import dataclasses
import inspect

from scrapy.settings import Settings

from harvester.config.spec import CONVERTERS, PROFILE_SETTINGS, SETTINGS, defaults
from harvester.extract.converters import available_converters
from harvester.extract.page import extract_page
from harvester.extract.pdf import extract_pdf
from harvester.extract.template import TemplateLearner
from harvester.index.engines import open_store
from harvester.index.engines.edge import EdgeStore
from harvester.render.browser import launch_options
from harvester.sites import PROFILE_KEYS, SiteProfile, SiteProfiles


def default_of(function: object, parameter: str) -> object:
    return inspect.signature(function).parameters[parameter].default


def test_the_store_waits_as_long_as_the_setting_says() -> None:
    wait = SETTINGS["HARVESTER_QDRANT_WAIT"].default
    assert default_of(open_store, "wait") == wait
    assert default_of(EdgeStore, "wait") == wait


def test_the_browser_launch_timeout_is_the_settings_default() -> None:
    timeout = SETTINGS["HARVESTER_RENDER_TIMEOUT_MS"].default
    assert default_of(launch_options, "timeout_ms") == timeout
    assert launch_options("")["timeout"] == timeout


def test_a_site_profiles_defaults_are_its_settings_defaults() -> None:
    fields = {field.name: field.default for field in dataclasses.fields(SiteProfile)}
    assert set(fields) == {"name", *PROFILE_KEYS}
    for key, name in PROFILE_SETTINGS.items():
        assert fields[key] == SETTINGS[name].default, key


def test_a_bare_site_profile_is_what_a_default_crawl_uses() -> None:
    settings = Settings()
    for name, value in defaults().items():
        settings.set(name, value, "addon")
    assert SiteProfiles(settings).for_url("http://example.invalid/page.html") == SiteProfile()


def test_profile_keys_are_read_with_their_settings_types() -> None:
    settings = Settings()
    for name, value in defaults().items():
        settings.set(name, value, "addon")
    settings.setdict({"HARVESTER_RENDER_DELAY": "1.5", "HARVESTER_RENDER_TIMEOUT_MS": "2000",
                      "HARVESTER_PROCESS_IFRAMES": "true", "DOWNLOAD_DELAY": "2",
                      "HARVESTER_FALLBACK_ENABLED": "0", "HARVESTER_RENDER_WAIT_UNTIL": "commit"}, "cmdline")
    profile = SiteProfiles(settings).for_url("http://example.invalid/")
    assert profile.delay_before_return_html == 1.5 and profile.page_timeout_ms == 2000
    assert profile.process_iframes is True and profile.fallback_enabled is False
    assert profile.download_delay == 2.0 and profile.wait_until == "commit"


def test_the_extraction_defaults_are_the_spec_defaults() -> None:
    min_chars = SETTINGS["HARVESTER_EXTRACTION_MIN_CHARS"].default
    assert default_of(extract_page, "min_chars") == min_chars
    assert default_of(extract_pdf, "min_chars") == min_chars
    assert default_of(extract_page, "converter") == SETTINGS["HARVESTER_MARKDOWN_CONVERTER"].default
    assert default_of(TemplateLearner, "sample") == SETTINGS["HARVESTER_TEMPLATE_SAMPLE"].default
    assert TemplateLearner().sample == SETTINGS["HARVESTER_TEMPLATE_SAMPLE"].default


def test_every_converter_the_spec_accepts_is_registered() -> None:
    assert SETTINGS["HARVESTER_MARKDOWN_CONVERTER"].default in CONVERTERS
    assert set(CONVERTERS) <= set(available_converters())
