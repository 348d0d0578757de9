"""Site profiles offline: loading, matching, the key whitelist, precedence and validation."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.crawler import AsyncCrawlerRunner
from scrapy.utils.test import get_reactor_settings

from harvester.addon import HarvesterAddon
from harvester.commands import effective_settings
from harvester.config.checks import InvalidSettings, check_settings
from harvester.sites import SiteProfiles, shipped_profiles
from harvester.sites.loader import ProfileError, ProfileMatcher, load_profiles, parse_profile
from harvester.sites.middleware import SiteProfileMiddleware
from harvester.spiders.docs import DocsSpider

SITE = "http://127.0.0.1:8000/"


def profile(text: str, name: str = "p", user: bool = True):
    return parse_profile(text, f"/profiles/{name}.toml", name, user=user)


def matcher(**texts: str) -> ProfileMatcher:
    return ProfileMatcher(profile(text, name) for name, text in texts.items())


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.toml"
    path.write_text(text)
    return path


def test_a_profile_keeps_its_checked_keys_and_what_it_matches() -> None:
    p = profile('render = "always"\nallow = "/docs/"\ndownload_delay = 2\n'
                '[match]\ndomains = ["Docs.Example.com", "*.example.org"]\nurl_prefixes = ["HTTPS://Wiki.Example.com/w/"]')
    assert p.values == {"render": "always", "allow": ("/docs/",), "download_delay": 2.0}
    assert p.domains == ("docs.example.com", "*.example.org")
    assert p.url_prefixes == ("https://wiki.example.com/w/",)


def test_a_profile_written_as_a_user_reads_the_site_matches_its_requests() -> None:
    """Requests carry IDNA hosts and escaped paths (Scrapy's safe_url_string)."""
    m = ProfileMatcher([
        profile('[match]\ndomains = ["Bücher.example", "*.über.test"]', "idn"),
        profile('[match]\nurl_prefixes = ["https://ex.com/es/función/"]', "path")])
    for url, name in [("https://bücher.example/x", "idn"), ("http://wiki.über.test/", "idn"),
                      ("https://ex.com/es/función/a.html", "path")]:
        assert (m.match(Request(url).url) or profile('[match]\ndomains = ["x"]', "none")).name == name
    assert m.match("https://bucher.example/x") is None


def test_hosts_wildcards_ports_prefixes_and_patterns_match() -> None:
    m = matcher(exact='[match]\ndomains = ["example.com"]', wild='[match]\ndomains = ["*.example.com"]',
                port='[match]\ndomains = ["example.com:8080"]', prefix='[match]\nurl_prefixes = ["https://example.com/docs/"]',
                pattern='[match]\nurl_patterns = ["/wiki/"]')
    def name(url: str) -> str:
        return (m.match(url) or profile('[match]\ndomains = ["x"]', "none")).name

    assert name("https://example.com/") == "exact"
    assert name("https://EXAMPLE.com./") == "exact"
    assert name("https://a.b.example.com/") == "wild"
    assert name("https://notexample.com/") == "none"  # a wildcard is a whole label
    assert name("http://example.com:8080/") == "port"
    assert name("https://example.com/docs/intro.html") == "prefix"
    assert name("https://example.com/wiki/Main") == "pattern"
    assert name("https://other.org/") == "none"


def test_the_most_specific_match_wins() -> None:
    m = matcher(short_wild='[match]\ndomains = ["*.io"]', long_wild='[match]\ndomains = ["*.readthedocs.io"]',
                host='[match]\ndomains = ["flask.readthedocs.io"]',
                short_prefix='[match]\nurl_prefixes = ["https://flask.readthedocs.io/"]',
                long_prefix='[match]\nurl_prefixes = ["https://flask.readthedocs.io/en/"]')
    assert m.match("https://x.readthedocs.io/").name == "long_wild"
    assert m.match("https://x.io/").name == "short_wild"
    assert m.match("https://flask.readthedocs.io/_static/").name == "short_prefix"
    assert m.match("https://flask.readthedocs.io/en/latest/").name == "long_prefix"
    assert ProfileMatcher([profile('[match]\ndomains = ["flask.readthedocs.io"]', "host")]).match(
        "https://flask.readthedocs.io/").name == "host"


def test_user_profiles_win_over_shipped_ones(tmp_path: Path) -> None:
    shipped = [("rtd.toml", 'render = "never"\n[match]\ndomains = ["*.readthedocs.io"]'),
               ("python.toml", 'render = "never"\n[match]\ndomains = ["docs.python.org"]')]
    write(tmp_path, "mine", 'render = "always"\n[match]\ndomains = ["*.readthedocs.io"]')
    write(tmp_path, "python", 'render = "auto"\n[match]\ndomains = ["docs.python.org"]')
    profiles = load_profiles(shipped, tmp_path)
    m = ProfileMatcher(profiles)
    assert m.match("https://a.readthedocs.io/").name == "mine"  # same key: the user's
    python = m.match("https://docs.python.org/3/")  # same file name: the shipped one is replaced
    assert (python.user, python.values["render"]) == (True, "auto")
    assert sorted(p.name for p in profiles) == ["mine", "python", "rtd"]


def test_two_user_profiles_may_not_claim_the_same_host(tmp_path: Path) -> None:
    write(tmp_path, "a", '[match]\ndomains = ["example.com"]')
    write(tmp_path, "b", '[match]\ndomains = ["example.com"]')
    with pytest.raises(ProfileError, match=r"b\.toml: match 'example.com' is also claimed by .*a\.toml"):
        load_profiles([], tmp_path)


def test_unknown_keys_are_warned_about_once_and_never_passed_on(tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    path = write(tmp_path, "odd", 'render = "never"\njavascript = true\nrender_mode = "x"\n'
                                  '[match]\ndomains = ["example.com"]\ndomian = ["typo.com"]')
    with caplog.at_level(logging.WARNING, logger="harvester.sites.loader"):
        for _ in range(3):
            profiles = load_profiles([], tmp_path)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 3, warnings
    assert any(str(path) in w and "'javascript'" in w for w in warnings)
    assert any("'render_mode'" in w for w in warnings) and any("'match.domian'" in w for w in warnings)
    assert profiles[0].values == {"render": "never"}
    assert not hasattr(SiteProfiles(effective_settings(_settings(HARVESTER_SITE_PROFILES_DIR=str(tmp_path))))
                       .for_url("https://example.com/"), "javascript")


@pytest.mark.parametrize(("text", "message"), [
    ('render = "sometimes"\n[match]\ndomains = ["a.com"]', "render = 'sometimes' must be one of never, always, auto"),
    ('allow = ["(unclosed"]\n[match]\ndomains = ["a.com"]', "allow = ['(unclosed'] invalid URL pattern"),
    ('deny = 3\n[match]\ndomains = ["a.com"]', "deny = 3 must be a regex or a list of regexes"),
    ('content_selector = "div[[x"\n[match]\ndomains = ["a.com"]', "content_selector = 'div[[x' invalid CSS selector"),
    ('download_delay = -1\n[match]\ndomains = ["a.com"]', "download_delay = -1 must not be negative"),
    ('download_delay = "2"\n[match]\ndomains = ["a.com"]', "download_delay = '2' must be a number"),
    ('page_timeout_ms = 0\n[match]\ndomains = ["a.com"]', "page_timeout_ms = 0 must be a positive integer"),
    ('process_iframes = "yes"\n[match]\ndomains = ["a.com"]', "process_iframes = 'yes' must be true or false"),
    ('wait_until = "idle"\n[match]\ndomains = ["a.com"]', "wait_until = 'idle' must be one of"),
    ('user_agent = "a\\nb"\n[match]\ndomains = ["a.com"]', "user_agent = 'a\\nb' must be one line"),
    ('render = "never"', "match is missing"),
    ('[match]\ndomians = ["a.com"]', "match is empty"),
    ('[match]\ndomains = ["https://a.com/"]', "match.domains: 'https://a.com/' is not a host name"),
    ('[match]\nurl_prefixes = ["/docs/"]', "match.url_prefixes: '/docs/' must start with http"),
    ('[match]\nurl_patterns = ["(x"]', "match.url_patterns: invalid regex"),
    ('render = "never\n[match]', "not valid TOML"),
])
def test_bad_values_name_the_file_and_the_key(text: str, message: str) -> None:
    with pytest.raises(ProfileError) as error:
        profile(text, "bad")
    assert str(error.value).startswith("site profile /profiles/bad.toml: ")
    assert message in str(error.value)


def test_the_shipped_profiles_are_valid_and_match_their_sites() -> None:
    profiles = load_profiles(shipped_profiles(), None)
    assert {"readthedocs", "python-docs", "docs-rs", "notion"} <= {p.name for p in profiles}
    m = ProfileMatcher(profiles)
    assert m.match("https://flask.readthedocs.io/en/latest/").values["render"] == "never"
    assert m.match("https://docs.python.org/3/library/").values["render"] == "never"
    assert m.match("https://acme.notion.site/Handbook-123").values["render"] == "always"
    assert m.match("https://example.com/") is None


def _settings(**values: object):
    from scrapy.settings import Settings

    from harvester import settings as project_settings

    settings = Settings()
    settings.setmodule(project_settings, "project")
    settings.update(values, "project")
    return settings


def test_check_settings_stops_on_a_bad_profile_or_directory(tmp_path: Path) -> None:
    path = write(tmp_path / "profiles", "bad", 'render = "sometimes"\n[match]\ndomains = ["a.com"]')
    with pytest.raises(InvalidSettings, match=f"site profile {path}: render"):
        check_settings(effective_settings(_settings(HARVESTER_SITE_PROFILES_DIR=str(path.parent))))
    with pytest.raises(InvalidSettings, match=r"HARVESTER_SITE_PROFILES_DIR='.*nowhere' is not a directory"):
        check_settings(effective_settings(_settings(HARVESTER_SITE_PROFILES_DIR=str(tmp_path / "nowhere"))))
    with pytest.raises(InvalidSettings, match="HARVESTER_RENDER='sometimes'"):
        check_settings(effective_settings(_settings(HARVESTER_RENDER="sometimes")))
    check_settings(effective_settings(_settings()))


LOOPBACK_PROFILE = """
render = "always"
content_selector = "div.article"
deny = ["/private/"]
download_delay = 1.5
user_agent = "FrobBot/1.0"
[match]
domains = ["127.0.0.1"]
"""


def make_spider(profiles_dir: Path, args: dict[str, str] | None = None, **settings: object) -> DocsSpider:
    """A spider as a crawl builds it; ``settings`` are project settings (what a user set)."""
    runner = AsyncCrawlerRunner({"ADDONS": {HarvesterAddon: 0}, **get_reactor_settings(),
                                 "HARVESTER_SITE_PROFILES_DIR": str(profiles_dir), **settings})
    crawler = runner.create_crawler(DocsSpider)
    spider = DocsSpider.from_crawler(crawler, start=SITE + "docs/", **(args or {}))
    crawler.spider = spider
    crawler._apply_settings()
    return spider


def test_a_profile_overrides_the_defaults(tmp_path: Path) -> None:
    write(tmp_path, "loopback", LOOPBACK_PROFILE)
    spider = make_spider(tmp_path)
    resolved = SiteProfiles.from_crawler(spider.crawler).for_url(SITE + "docs/a.html")
    assert (resolved.name, resolved.render, resolved.content_selector, resolved.deny, resolved.download_delay,
            resolved.user_agent) == ("loopback", "always", "div.article", ("/private/",), 1.5, "FrobBot/1.0")
    other = SiteProfiles.from_crawler(spider.crawler).for_url("http://example.com/")
    assert (other.name, other.render, other.download_delay, other.deny) == (None, "auto", 0.0, ())
    assert other.user_agent.startswith("Harvester/")
    assert not spider.wants(SITE + "docs/private/x.html")
    assert spider.wants(SITE + "docs/public.html")


def test_settings_a_user_set_and_spider_arguments_override_the_profile(tmp_path: Path) -> None:
    write(tmp_path, "loopback", LOOPBACK_PROFILE)
    spider = make_spider(tmp_path, args={"content_selector": "main", "deny": "/drafts/", "render": "never"},
                         DOWNLOAD_DELAY="0.25", USER_AGENT="Mine/2")
    resolved = SiteProfiles.from_crawler(spider.crawler).for_url(SITE + "docs/a.html")
    assert resolved.name == "loopback"
    assert (resolved.content_selector, resolved.render, resolved.deny) == ("main", "never", ("/drafts/",))
    assert (resolved.download_delay, resolved.user_agent) == (0.25, "Mine/2")
    assert spider.wants(SITE + "docs/private/x.html")  # -a deny replaced the profile's
    assert not spider.wants(SITE + "docs/drafts/x.html")
    # -s on the command line has the highest priority of all.
    spider = make_spider(tmp_path)
    spider.crawler.settings.frozen = False
    spider.crawler.settings.set("HARVESTER_RENDER", "never", "cmdline")
    assert SiteProfiles(spider.crawler.settings).for_url(SITE).render == "never"


def test_the_render_argument_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="render must be one of never, always, auto, got 'sometimes'"):
        DocsSpider(start=SITE, render="sometimes")
    assert make_spider(tmp_path, args={"render": "always"}).settings.get("HARVESTER_RENDER") == "always"


def test_the_middleware_sends_the_profile_user_agent_and_records_the_host(tmp_path: Path) -> None:
    write(tmp_path, "loopback", LOOPBACK_PROFILE)
    spider = make_spider(tmp_path)
    crawler = spider.crawler
    from scrapy.statscollectors import MemoryStatsCollector

    crawler.stats = MemoryStatsCollector(crawler)
    middleware = SiteProfileMiddleware(crawler)
    request = Request(SITE + "docs/a.html")
    middleware.process_request(request)
    assert request.headers[b"User-Agent"] == b"FrobBot/1.0"
    other = Request("http://example.com/")
    middleware.process_request(other)
    assert b"User-Agent" not in other.headers  # Scrapy's UserAgentMiddleware sets the default
    assert crawler.stats.get_value("harvester/sites/profile/loopback") == 1
    assert dict(SiteProfiles.from_crawler(crawler).served) == {"127.0.0.1:8000": {"loopback"}}


def test_the_throttle_keeps_a_profile_delay_even_with_autothrottle_and_crawl_delay_off(tmp_path: Path) -> None:
    from scrapy.exceptions import NotConfigured
    from scrapy.utils.misc import build_from_crawler
    from scrapy.utils.test import get_crawler

    from harvester.fetch.throttle import CrawlDelayThrottle

    off = {"ADDONS": {HarvesterAddon: 0}, "AUTOTHROTTLE_ENABLED": False, "HARVESTER_CRAWL_DELAY_ENABLED": False}
    with pytest.raises(NotConfigured):
        build_from_crawler(CrawlDelayThrottle, get_crawler(settings_dict=off))
    write(tmp_path, "slow", 'download_delay = 3\n[match]\ndomains = ["example.com"]')
    crawler = get_crawler(settings_dict={**off, "HARVESTER_SITE_PROFILES_DIR": str(tmp_path)})
    assert build_from_crawler(CrawlDelayThrottle, crawler) is not None
    # A DOWNLOAD_DELAY the user set overrides the profile's: nothing left for the throttle to do.
    crawler = get_crawler(settings_dict={**off, "HARVESTER_SITE_PROFILES_DIR": str(tmp_path), "DOWNLOAD_DELAY": 1})
    with pytest.raises(NotConfigured):
        build_from_crawler(CrawlDelayThrottle, crawler)
