"""Links worked out once per crawl: the same URLs as Scrapy's own LinkExtractor, far less work."""

from __future__ import annotations

import pytest
from scrapy.http import HtmlResponse, Request
from scrapy.linkextractors import IGNORED_EXTENSIONS, LinkExtractor

from harvester.spiders.links import PageLinkExtractor
from harvester.spiders.site import SiteSpider
from harvester.urls.hosts import host_key
from harvester.urls.links import BoundedCache, join_key, plain_host, without_fragment
from tests.conftest import doc_root
from tests.test_spiders import html_response, make_spider

BASE = "http://127.0.0.1:8000/docs/"

TRICKY = """<html><head>{base}</head><body>
<a href="a.html">a</a> <a href=" b.html#part ">b</a> <a href="b.html">b again</a>
<a href="../up.html">up</a> <a href="/root.html">root</a> <a href="//other.example/x">other</a>
<a href="sub/./c.html?x=1&amp;y=2#f">c</a> <a href="#top">top</a> <a href="">self</a> <a href="?page=2">q</a>
<a href="caf\u00e9 menu.html">accent</a> <a href="%7Euser/">tilde</a> <a href="mailto:a@b.c">mail</a>
<a href="javascript:void(0)">js</a> <a href="tel:+1">tel</a> <a href="data:text/html,hi">data</a>
<a href="logo.PNG">png</a> <a href="archive.zip">zip</a> <a href="guide.pdf">pdf</a>
<a href="http://[::1">bogus</a> <a>no href</a> <a href="ftp://files.example/f">ftp</a>
<map><area href="area.html"></map> <link href="style.css" rel="stylesheet">
<a rel="nofollow" href="nofollow.html">nf</a> <a href="HTTP://127.0.0.1:8000/docs/Upper.html">upper</a>
</body></html>"""


def scrapy_urls(extractor: LinkExtractor, response: HtmlResponse) -> list[str]:
    return list(dict.fromkeys(without_fragment(link.url) for link in extractor.extract_links(response)))


def response(url: str, body: str, encoding: str = "utf-8") -> HtmlResponse:
    return HtmlResponse(url, body=body.encode(encoding), encoding=encoding, request=Request(url))


@pytest.mark.parametrize("base", ["", '<base href="http://127.0.0.1:8000/other/">', '<base href="../elsewhere/">'])
@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_the_urls_are_scrapys_on_tricky_links(base: str, encoding: str) -> None:
    options = {"deny_extensions": [e for e in IGNORED_EXTENSIONS if e != "pdf"]}
    ours, theirs = PageLinkExtractor(**options), LinkExtractor(**options)
    # Pages of one directory share answers, pages of another must not get them.
    for url in (BASE + "p1.html", BASE + "p2.html?v=1", BASE + "deeper/p3.html", BASE, "http://127.0.0.1:8000/"):
        page = response(url, TRICKY.format(base=base), encoding)
        assert ours.urls(page) == scrapy_urls(theirs, page), url


def test_allow_and_deny_of_the_extractor_still_apply() -> None:
    options = {"allow": [r"/docs/"], "deny": [r"b\.html"]}
    ours, theirs = PageLinkExtractor(**options), LinkExtractor(**options)
    page = response(BASE + "p1.html", TRICKY.format(base=""))
    assert ours.urls(page) == scrapy_urls(theirs, page)
    assert BASE + "a.html" in ours.urls(page) and BASE + "b.html" not in ours.urls(page)


def test_options_that_depend_on_more_than_the_href_take_scrapys_path() -> None:
    options = {"restrict_css": ["a[rel]"], "restrict_text": ["n"]}
    page = response(BASE + "p1.html", TRICKY.format(base=""))
    assert PageLinkExtractor(**options).urls(page) == scrapy_urls(LinkExtractor(**options), page)


def test_every_page_of_a_real_docs_site_gives_scrapys_urls() -> None:
    root = doc_root("scrapy")
    ours, theirs = PageLinkExtractor(), LinkExtractor()
    pages = sorted(root.rglob("*.html"))
    assert len(pages) > 40
    for path in pages:
        url = "http://127.0.0.1:8000/" + path.relative_to(root).as_posix()
        page = HtmlResponse(url, body=path.read_bytes(), request=Request(url))
        assert ours.urls(page) == scrapy_urls(theirs, page), url


OTHER_HOSTS = """<a href="https://github.com/scrapy/scrapy/issues/1">issue</a> <a href="//other.example">other</a>
<a href="HTTP://OTHER.example:8000/x?y">upper</a> <a href="http://127.0.0.1:8000/docs/in.html">in</a>
<a href="http://127.0.0.1:08000/docs/zero.html">leading zero</a> <a href="http://user@other.example/">user</a>
<a href="http://127.0.0.1:8000.evil.example/">not a port</a> <a href="http://[::1]:8000/">ipv6</a>
<a href="http://café.example/">idna</a> <a href="http://%31%32%37.0.0.1:8000/docs/escaped.html">escaped</a>
<a href="https://127.0.0.1:8000/docs/s.html">https</a> <a href="//127.0.0.1:8000/docs/rel.html">scheme-relative</a>"""


@pytest.mark.parametrize("base", ["", '<base href="http://other.example/">'])
def test_hosts_drop_links_to_other_hosts_before_they_are_resolved(base: str) -> None:
    ours, theirs = PageLinkExtractor(), LinkExtractor()
    hosts = (host_key(BASE),)
    for body in (TRICKY.format(base=base), OTHER_HOSTS):
        page = response(BASE + "p1.html", base + body)
        everything = scrapy_urls(theirs, page)
        kept = ours.urls(page, hosts=hosts)
        # Every link on the host stays, in order; of the others only those a plain reading of the
        # href cannot tell (the caller's scope check drops them) may.
        assert [url for url in everything if host_key(url) in hosts] == [url for url in kept if host_key(url) in hosts]
        assert [url for url in everything if url in kept] == kept
    page = response(BASE + "p1.html", OTHER_HOSTS)
    assert not {"https://github.com/scrapy/scrapy/issues/1", "http://other.example", "http://other.example:8000/x?y"} \
        & set(ours.urls(page, hosts=hosts))
    assert ours.urls(page, hosts=hosts) != ours.urls(page)


def test_a_plain_host_is_read_only_where_resolving_would_not_change_it() -> None:
    assert plain_host("https://GitHub.com/a") == "github.com"
    assert plain_host("//h.example:8080?x") == "h.example:8080"
    assert plain_host("http://h.example#top") == "h.example"
    for href in ("a.html", "/root.html", "http://u@h/", "http://[::1]/", "http://h:080/", "http://h:/",
                 "http://h:8000.x/", "http://café/", "http://\u212aelvin.example/", "http://%68/", "ftp://h/",
                 "http:h/x", "http://h\\x/"):
        assert plain_host(href) is None, href
    assert host_key("https://GitHub.com/a") == plain_host("https://GitHub.com/a")


def test_every_page_of_a_real_docs_site_keeps_its_own_links_with_hosts() -> None:
    root = doc_root("scrapy")
    ours, theirs = PageLinkExtractor(), LinkExtractor()
    dropped = 0
    for path in sorted(root.rglob("*.html")):
        url = "http://127.0.0.1:8000/" + path.relative_to(root).as_posix()
        page = HtmlResponse(url, body=path.read_bytes(), request=Request(url))
        everything = scrapy_urls(theirs, page)
        kept = ours.urls(page, hosts=("127.0.0.1:8000",))
        # (A page under a <base href> elsewhere keeps its relative links: the scope check drops them.)
        assert [link for link in kept if host_key(link) == "127.0.0.1:8000"] == \
            [link for link in everything if host_key(link) == "127.0.0.1:8000"], url
        assert [link for link in everything if link in kept] == kept, url
        dropped += len(everything) - len(kept)
    assert dropped > 1000  # the changelog's links to issues, among others


def test_join_key_is_what_a_relative_href_depends_on() -> None:
    assert join_key("http://h:81/a/b.html?x=1#y") == "http://h:81/a/"
    assert join_key("http://h/a/") == "http://h/a/"
    assert join_key("http://h") == "http://h"


def test_a_bounded_cache_never_grows_past_its_size() -> None:
    calls: list[int] = []
    cache: BoundedCache[int, int] = BoundedCache(lambda n: calls.append(n) or n * 2, size=3)
    assert [cache(n) for n in (1, 2, 1, 3, 4, 1)] == [2, 4, 2, 6, 8, 2]
    assert len(cache) <= 3 and calls == [1, 2, 3, 4, 1]


def test_a_bounded_cache_keeps_what_is_asked_again_and_again() -> None:
    calls: list[int] = []
    cache: BoundedCache[int, int] = BoundedCache(lambda n: calls.append(n) or n * 2, size=4)
    for n in range(2, 100):  # a navigation link (1) between every page's own links
        assert (cache(1), cache(n)) == (2, 2 * n)
        assert len(cache) <= 4
    assert calls.count(1) == 1


def test_links_to_claimed_pages_build_no_request_but_are_remembered() -> None:
    spider = make_spider(SiteSpider, start=BASE)
    body = '<a href="a.html">a</a> <a href="a.html#x">a</a> <a href="b/">b</a> <a href="b/index.html">b</a>'
    first = html_response(BASE + "p1.html", body)
    assert [r.url for r in spider._requests_to_follow(first)] == [BASE + "a.html", BASE + "b/"]
    second = html_response(BASE + "p2.html", body + '<a href="c.html">c</a> <a href="/elsewhere.html">out</a>')
    assert [r.url for r in spider._requests_to_follow(second)] == [BASE + "c.html"]
    # Every wanted link is stored with its page (for re-crawls), claimed or not; others are not.
    assert list(second.meta["harvester_links"]) == [BASE + "a.html", BASE + "b/", BASE + "b/index.html",
                                                    BASE + "c.html"]
    assert spider.crawler.stats.get_value("harvester/cpu_ms/links") > 0


def test_fragments_are_dropped_before_the_url_rules_judge_a_link() -> None:
    spider = make_spider(SiteSpider, start=BASE)
    page = html_response(BASE + "p1.html", '<a href="genindex.html#G">index</a> <a href="ok.html#x">ok</a>')
    assert [r.url for r in spider._requests_to_follow(page)] == [BASE + "ok.html"]

