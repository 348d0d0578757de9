"""HARVESTER_PROXY / HARVESTER_PROXY_MODE: parsing, the checks at start, and what the browser gets."""

from __future__ import annotations

import logging

import pytest
from scrapy.settings import Settings

import harvester.proxy as proxy_module
from harvester.addon import HarvesterAddon
from harvester.config.checks import InvalidSettings, check_settings
from harvester.proxy import (
    ProxySettingsError,
    ProxyURL,
    ProxyURLError,
    browser_guard_proxy,
    browser_upstream,
    proxy_settings,
)


def settings(**values: object) -> Settings:
    result = Settings()
    HarvesterAddon().update_settings(result)
    result.setdict(values, priority="cmdline")
    return result


@pytest.mark.parametrize(("url", "expected"), [
    ("http://proxy.corp:3128", ProxyURL("http", "proxy.corp", 3128)),
    ("https://proxy.corp", ProxyURL("https", "proxy.corp", 443)),
    ("socks5://u:p%40ss@10.0.0.9", ProxyURL("socks5", "10.0.0.9", 1080, "u", "p@ss")),
    ("HTTP://[::1]:8080/", ProxyURL("http", "::1", 8080)),
])
def test_proxy_urls_parse(url: str, expected: ProxyURL) -> None:
    assert ProxyURL.parse(url) == expected


@pytest.mark.parametrize(("url", "message"), [
    ("ftp://proxy:21", "scheme"), ("socks5h://proxy:1080", "scheme"), ("socks4://proxy:1080", "scheme"),
    ("proxy.corp:3128", "scheme"), ("http://:3128", "no host"), ("http://proxy:99999", "not a valid"),
    ("http://proxy:3128/path", "host:port only"),
])
def test_bad_proxy_urls_are_refused(url: str, message: str) -> None:
    with pytest.raises(ProxyURLError, match=message):
        ProxyURL.parse(url)


def test_redacted_urls_hide_credentials() -> None:
    assert ProxyURL.parse("http://user:secret@proxy:3128").redacted == "http://proxy:3128"
    with pytest.raises(ProxyURLError) as caught:
        ProxyURL.parse("ftp://user:secret@proxy:21")
    assert "secret" not in str(caught.value)


def test_modes() -> None:
    assert proxy_settings(settings()) == ("none", None)
    assert proxy_settings(settings(HARVESTER_PROXY="http://p:1")) == ("none", ProxyURL("http", "p", 1))
    assert proxy_settings(settings(HARVESTER_PROXY="http://p:1", HARVESTER_PROXY_MODE="Fallback"))[0] == "fallback"
    assert proxy_settings(settings(HARVESTER_PROXY="http://p:1", HARVESTER_PROXY_MODE="proxy"))[0] == "proxy"


def test_direct_is_an_alias_of_proxy_warned_once(caplog: pytest.LogCaptureFixture,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proxy_module, "_warned_aliases", set())
    with caplog.at_level(logging.WARNING, logger="harvester.proxy"):
        for _ in range(3):
            assert proxy_settings(settings(HARVESTER_PROXY="http://p:1", HARVESTER_PROXY_MODE="direct"))[0] == "proxy"
    assert [record.getMessage() for record in caplog.records].count(
        "HARVESTER_PROXY_MODE=direct is deprecated: it always meant 'proxy' (every request through "
        "HARVESTER_PROXY); use HARVESTER_PROXY_MODE=proxy") == 1


@pytest.mark.parametrize(("values", "message"), [
    ({"HARVESTER_PROXY_MODE": "proxy"}, "needs HARVESTER_PROXY"),
    ({"HARVESTER_PROXY_MODE": "fallback"}, "needs HARVESTER_PROXY"),
    ({"HARVESTER_PROXY_MODE": "always", "HARVESTER_PROXY": "http://p:1"}, "must be one of none, fallback, proxy"),
    ({"HARVESTER_PROXY": "gopher://p:1"}, "HARVESTER_PROXY: 'gopher://p:1': the proxy scheme"),
])
def test_check_settings_refuses_bad_proxy_settings(values: dict[str, str], message: str) -> None:
    with pytest.raises(ProxySettingsError, match=message):
        proxy_settings(settings(**values))
    with pytest.raises(InvalidSettings, match=message):
        check_settings(settings(**values))


def test_browser_upstream_follows_the_mode() -> None:
    assert browser_upstream(settings(HARVESTER_PROXY="socks5://p:1")) is None
    assert browser_upstream(settings(HARVESTER_PROXY="socks5://p:1", HARVESTER_PROXY_MODE="proxy")) == "socks5://p:1"
    assert browser_upstream(settings(HARVESTER_PROXY="http://p:1", HARVESTER_PROXY_MODE="fallback")) == "http://p:1"


def test_browser_guard_proxy_is_configured_from_the_settings() -> None:
    guard = browser_guard_proxy(settings(HARVESTER_PROXY="http://p:1", HARVESTER_PROXY_MODE="fallback",
                                         HARVESTER_ALLOWED_HOSTS="wiki.corp,10.0.0.0/8"))
    assert guard.upstream == ProxyURL("http", "p", 1) and guard.fallback and guard.check
    assert guard.allow.allows_name("wiki.corp", 443)
    plain = browser_guard_proxy(settings(HARVESTER_SSRF_GUARD_ENABLED=False))
    assert plain.upstream is None and not plain.fallback and not plain.check
