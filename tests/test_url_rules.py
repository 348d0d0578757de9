"""The crawl's URL rules (``UrlRules``): one object per crawler that every component asks, and the
host of a URL (``harvester.urls.hosts``)."""

from __future__ import annotations

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.settings import Settings
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from harvester.addon import HarvesterAddon
from harvester.recrawl.extension import Recrawl
from harvester.urls.fingerprint import CanonicalRequestFingerprinter
from harvester.urls.hosts import host_key, host_name
from harvester.urls.rules import UrlRules


def crawler_with(**settings):
    return get_crawler(settings_dict={"ADDONS": {HarvesterAddon: 0}, **settings})


def test_the_default_rules_strip_tracking_and_session_parameters():
    rules = UrlRules()
    assert rules.canonical("HTTP://H:80/a.html?b=1&utm_source=x&sid=7#top") == "http://h/a.html?b=1"
    assert rules.page_key("http://h/a/index.html?sid=7") == rules.page_key("http://h/a/") == "http://h/a"
    assert rules.in_scope("http://h:8000/docs/a.html", "http://h:8000/docs/") and \
        not rules.in_scope("http://h/docs/a.html", "http://h:8000/docs/")


def test_a_custom_strip_list_keeps_what_it_does_not_name():
    rules = UrlRules.from_settings(crawler_with(HARVESTER_URL_STRIP_PARAMS=[r"utm_\w+"]).settings)
    assert rules.canonical("http://h/a.html?sid=7&utm_medium=m") == "http://h/a.html?sid=7"
    assert rules.page_key("http://h/a/index.html?sid=7") == "http://h/a?sid=7"
    assert UrlRules([]).canonical("http://h/a.html?utm_source=x") == "http://h/a.html?utm_source=x"


def test_one_object_per_crawler_shared_by_the_components():
    crawler = crawler_with(HARVESTER_URL_STRIP_PARAMS=[r"utm_\w+"])
    rules = UrlRules.from_crawler(crawler)
    assert UrlRules.from_crawler(crawler) is rules
    assert build_from_crawler(Recrawl, crawler).url_rules is rules
    assert UrlRules.from_crawler(crawler_with()) is not rules
    fingerprint = build_from_crawler(CanonicalRequestFingerprinter, crawler).fingerprint
    assert fingerprint(Request("http://h/a.html?sid=7")) != fingerprint(Request("http://h/a.html"))
    assert fingerprint(Request("http://h/a.html?sid=7&utm_source=x")) == fingerprint(Request("http://h/a.html?sid=7"))


def test_rules_asked_before_the_settings_are_complete_follow_them():
    crawler = Crawler(Spider, Settings({"HARVESTER_URL_STRIP_PARAMS": [r"utm_\w+"]}))
    early = UrlRules.from_crawler(crawler)
    crawler.settings.set("HARVESTER_URL_STRIP_PARAMS", ["sid"], "cmdline")
    assert UrlRules.from_crawler(crawler) is not early
    assert UrlRules.from_crawler(crawler).canonical("http://h/a?sid=1&utm_source=x") == "http://h/a?utm_source=x"


def test_host_key_names_the_site_and_host_name_the_machine():
    assert host_key("http://User@Docs.Example.com:8080/a") == "docs.example.com:8080"
    assert host_key("https://docs.example.com/a") == "docs.example.com"
    assert host_key("http://[::1]:8000/") == "::1:8000"
    assert host_name("http://User@Docs.Example.com:8080/a") == "docs.example.com"
    assert host_name("http://[::1]:8000/") == "::1"
    assert host_name("http://[::1/") == "" and host_name("/relative") == ""
