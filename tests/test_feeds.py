"""Feeds read as pages: the parser (harvester.urls.feeds) on RSS 2.0, Atom, RSS 1.0 and hostile
bodies, and the sitemap spider's handling of feed responses, offline."""

from __future__ import annotations

import gzip
import time

import pytest
from scrapy.exceptions import DontCloseSpider
from scrapy.http import HtmlResponse, Request, TextResponse, XmlResponse

from harvester.spiders.sitemap import FEED_PAGE, SitemapSpider
from harvester.urls.feeds import (
    FeedTooLarge,
    declared_feeds,
    feed_date,
    feed_kind,
    guessed_feeds,
    parse_feed,
)
from tests.test_spiders import make_spider

BASE = "http://127.0.0.1:8000/"

RSS = b"""<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:dc="http://purl.org/dc/elements/1.1/"
     xmlns:feedburner="http://rssnamespace.org/feedburner/ext/1.0">
<channel><title>Blog</title><link>http://h/</link><generator>https://wordpress.org/?v=6.5</generator>
<item><title>A</title><link>http://h/2025/a/</link><pubDate>Mon, 06 Jan 2025 10:00:00 +0100</pubDate>
  <guid isPermaLink="false">h-1</guid></item>
<item><title>B</title><guid>http://h/2025/b/</guid><pubDate>Tue, 07 Jan 2025 10:00:00 GMT</pubDate></item>
<item><title>C</title><link>/2025/c/</link><dc:date>2025-01-08</dc:date></item>
<item><title>D</title><link>http://feeds.feedburner.com/~r/blog/~3/xyz/</link>
  <feedburner:origLink>http://h/2025/d/</feedburner:origLink><pubDate>not a date</pubDate></item>
<item><title>No link</title><guid isPermaLink="false">h-5</guid></item>
<item><title>Mail</title><link>mailto:me@h</link></item>
</channel></rss>"""

ATOM = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xml:base="http://h/blog/">
<title>Blog</title><id>tag:h</id><link rel="self" href="atom.xml"/><link rel="next" href="atom.xml?page=2"/>
<entry><id>1</id><link rel="edit" href="/api/1"/><link rel="enclosure" href="/a.mp3"/>
  <link rel="alternate" type="text/html" href="posts/one.html"/>
  <published>2024-12-01T00:00:00Z</published><updated>2025-01-05T08:00:00Z</updated></entry>
<entry xml:base="http://h/other/"><id>2</id><link href="two.html"/><published>2025-01-04</published></entry>
<entry><id>3</id><title>no link</title></entry>
</feed>"""

RDF = b"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"
         xmlns:dc="http://purl.org/dc/elements/1.1/">
<channel rdf:about="http://h/"><title>Old blog</title><link>http://h/</link></channel>
<item rdf:about="http://h/x.html"><title>X</title><link>http://h/x.html</link><dc:date>2004-05-01T12:00:00+02:00</dc:date></item>
<item rdf:about="http://h/y.html"><title>Y</title><link>http://h/y.html</link></item>
</rdf:RDF>"""

SITEMAP = (b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
           b"<url><loc>http://h/a</loc></url></urlset>")


def entries(body: bytes, url: str = "http://h/feed/") -> list[tuple[str, str | None]]:
    feed = parse_feed(body, url)
    assert feed is not None
    return [(entry.url, entry.lastmod) for entry in feed.entries]


def test_rss_entries_their_links_and_dates():
    assert entries(RSS) == [
        ("http://h/2025/a/", "2025-01-06T10:00:00+01:00"),
        ("http://h/2025/b/", "2025-01-07T10:00:00+00:00"),  # a permalink guid stands for the link
        ("http://h/2025/c/", "2025-01-08"),  # relative, against the feed; a bare date stays one
        ("http://h/2025/d/", None),  # FeedBurner's original link, not its redirector
    ]
    feed = parse_feed(RSS, "http://h/feed/")
    assert feed.kind == "rss" and not feed.truncated
    # WordPress pages its feeds with ?paged=N, and says nothing of the next page.
    assert (feed.next_url, feed.next_guessed) == ("http://h/feed/?paged=2", True)
    assert parse_feed(RSS, "http://h/feed/?paged=2&lang=en").next_url == "http://h/feed/?lang=en&paged=3"
    plain = RSS.replace(b"<generator>https://wordpress.org/?v=6.5</generator>", b"")
    assert parse_feed(plain, "http://h/feed/").next_url is None


def test_atom_entries_prefer_the_html_alternate_and_the_update_date():
    assert entries(ATOM, "http://h/blog/atom.xml") == [
        ("http://h/blog/posts/one.html", "2025-01-05T08:00:00Z"),
        ("http://h/other/two.html", "2025-01-04"),  # the entry's own xml:base; published without updated
    ]
    feed = parse_feed(ATOM, "http://h/blog/atom.xml")
    assert feed.kind == "atom" and (feed.next_url, feed.next_guessed) == ("http://h/blog/atom.xml?page=2", False)


def test_rss_1_0_rdf_entries():
    assert entries(RDF) == [("http://h/x.html", "2004-05-01T12:00:00+02:00"), ("http://h/y.html", None)]
    assert parse_feed(RDF, "http://h/index.rdf").kind == "rdf"


@pytest.mark.parametrize(("body", "kind"), [
    (RSS, "rss"), (ATOM, "atom"), (RDF, "rdf"), (b"\xef\xbb\xbf\n  " + RSS.split(b"?>", 1)[1], "rss"),
    (SITEMAP, None), (b"<html><body><h1>Not found</h1></body></html>", None), (b"", None),
    (b"\x00\x01 not xml {{{", None), (b"<?xml version='1.0'?>", None),
    (b'<feed xmlns="http://example.com/not-atom"><entry/></feed>', None),
])
def test_a_feed_is_told_by_its_root_element(body, kind):
    assert feed_kind(body) == kind
    assert (parse_feed(body, "http://h/f") is None) == (kind is None)


def test_a_broken_feed_gives_the_entries_before_the_break():
    truncated = RSS[: RSS.index(b"<item><title>C")] + b"<item><title>C</ti"
    assert [url for url, _ in entries(truncated)] == ["http://h/2025/a/", "http://h/2025/b/"]


def test_huge_feeds_are_refused_or_cut():
    with pytest.raises(FeedTooLarge, match="over the limit"):
        parse_feed(RSS, "http://h/feed/", max_bytes=len(RSS) - 1)
    items = b"".join(b"<item><link>http://h/p%d</link></item>" % n for n in range(50))
    feed = parse_feed(b"<rss><channel>" + items + b"</channel></rss>", "http://h/feed", max_entries=10)
    assert len(feed.entries) == 10 and feed.truncated


def test_entities_are_never_expanded_nor_fetched():
    lol = "".join(f'<!ENTITY lol{n} "{f"&lol{n - 1};" * 10}">' for n in range(1, 10))
    bomb = (f'<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY lol0 "lol">{lol}]>'
            "<rss><channel><item><link>http://h/a/&lol9;</link></item></channel></rss>").encode()
    started = time.perf_counter()
    assert entries(bomb) == [("http://h/a/", None)]  # libxml2 stops at the bomb; nothing is expanded
    assert time.perf_counter() - started < 1
    external = (b'<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY secret SYSTEM "file:///etc/passwd">'
                b'<!ENTITY remote SYSTEM "http://127.0.0.1:9/x">]>'
                b"<rss><channel><item><link>http://h/b/&secret;&remote;</link></item>"
                b"<item><link>http://h/c/</link></item></channel></rss>")
    assert entries(external) == [("http://h/b/", None), ("http://h/c/", None)]


@pytest.mark.parametrize(("text", "iso"), [
    ("Mon, 06 Jan 2025 10:00:00 GMT", "2025-01-06T10:00:00+00:00"),
    ("06 Jan 2025 10:00:00 -0500", "2025-01-06T10:00:00-05:00"),
    ("Mon, 06 Jan 2025 10:00:00 -0000", "2025-01-06T10:00:00+00:00"),  # zone unknown: UTC
    ("Mon, 06 Jan 2025 10:00:00 EST", "2025-01-06T10:00:00-05:00"),
    ("2025-01-06T10:00:00Z", "2025-01-06T10:00:00Z"), ("2025-01-06", "2025-01-06"),
    ("yesterday", None), ("", None), ("Mon, 99 Foo 2025", None),
])
def test_feed_dates_become_iso_8601(text, iso):
    assert feed_date(text) == iso


def test_declared_feeds_of_a_page():
    links = [
        ("alternate", "application/rss+xml", "/feed/"),
        ("alternate", "application/atom+xml; charset=utf-8", "atom.xml"),
        ("Alternate", "application/rss+xml", "/feed/"),  # the same again
        ("alternate", "application/rss+xml", "/comments/feed/"),  # comments on posts
        ("alternate", "text/html", "/fr/"), ("stylesheet", "text/css", "/s.css"),
        ("alternate", "application/json", "/feed.json"), ("alternate", "application/rss+xml", "javascript:x"),
    ]
    assert declared_feeds(links, "http://h/blog/") == ["http://h/feed/", "http://h/blog/atom.xml"]


def test_guessed_feeds_stay_under_the_prefix():
    assert guessed_feeds("http://h/blog/intro.html") == [
        "http://h/blog/feed", "http://h/blog/feed/", "http://h/blog/rss.xml", "http://h/blog/atom.xml",
        "http://h/blog/index.xml", "http://h/blog/feed.xml"]


# The spider, on hand-built responses.

def feed_response(cls, url, body, **meta):
    return cls(url, body=body, request=Request(url, meta=meta))


def rss_of(*paths: str, wordpress: bool = False) -> bytes:
    items = "".join(f"<item><link>{BASE.rstrip('/')}{path}</link></item>" for path in paths)
    generator = "<generator>https://wordpress.org/</generator>" if wordpress else ""
    return f'<?xml version="1.0"?><rss version="2.0"><channel>{generator}{items}</channel></rss>'.encode()


def test_the_spider_reads_a_feed_whatever_its_type_and_keeps_its_scope():
    spider = make_spider(SitemapSpider, start=BASE + "blog/")
    body = rss_of("/blog/a/", "/docs/b/", "/blog/c/")
    urls = [r.url for r in spider._parse_sitemap(feed_response(XmlResponse, BASE + "blog/feed/", body))]
    assert urls == [BASE + "blog/a/", BASE + "blog/c/"]
    assert spider.crawler.stats.get_value("harvester/sitemap/out_of_scope") == 1
    # Served as HTML, as plain text or gzipped: still a feed.
    for cls, url, data, page in ((HtmlResponse, "blog/rss", rss_of("/blog/d/"), "blog/d/"),
                                 (TextResponse, "blog/t", rss_of("/blog/e/"), "blog/e/"),
                                 (TextResponse, "blog/f.gz", gzip.compress(rss_of("/blog/f/")), "blog/f/")):
        assert [r.url for r in spider._parse_sitemap(feed_response(cls, BASE + url, data))] == [BASE + page]
    assert spider.crawler.stats.get_value("harvester/feeds/read") == 4


def test_feed_entries_are_read_in_their_request_form():
    """Raw UTF-8 paths are in scope under an escaped start; a URL no request can be made of is counted."""
    spider = make_spider(SitemapSpider, start=BASE + "blog/caf%C3%A9/")
    items = "".join(f"<item><link>{link}</link></item>" for link in (
        BASE + "blog/café/a/", "http://exa mple.com/blog/café/b/"))
    body = f'<?xml version="1.0"?><rss version="2.0"><channel>{items}</channel></rss>'.encode()
    urls = [r.url for r in spider._parse_sitemap(feed_response(XmlResponse, BASE + "blog/feed/", body))]
    assert urls == [BASE + "blog/caf%C3%A9/a/"]
    assert spider.crawler.stats.get_value("harvester/sitemap/invalid_urls") == 1


def test_the_spider_pages_a_feed_within_its_bound_while_pages_are_new():
    spider = make_spider(SitemapSpider, start=BASE)
    spider.settings.frozen = False
    spider.settings.set("HARVESTER_FEED_MAX_PAGES", 2)
    first = list(spider._parse_sitemap(feed_response(XmlResponse, BASE + "feed/", rss_of("/a/", wordpress=True))))
    assert [r.url for r in first] == [BASE + "a/", BASE + "feed/?paged=2"]
    assert first[1].meta[FEED_PAGE] == 2 and first[1].meta["harvester_probe"]
    second = list(spider._parse_sitemap(feed_response(XmlResponse, BASE + "feed/?paged=2",
                                                      rss_of("/b/", wordpress=True), **first[1].meta)))
    assert [r.url for r in second] == [BASE + "b/"], "page 2 of 2: the bound"
    # A server that ignores ?paged= repeats its first page: nothing new, no further page.
    spider = make_spider(SitemapSpider, start=BASE)
    list(spider._parse_sitemap(feed_response(XmlResponse, BASE + "feed/", rss_of("/a/", wordpress=True))))
    again = spider._parse_sitemap(feed_response(XmlResponse, BASE + "feed/?paged=2", rss_of("/a/", wordpress=True),
                                                **{FEED_PAGE: 2}))
    assert list(again) == []


def test_the_spider_finds_the_declared_feeds_else_guesses():
    spider = make_spider(SitemapSpider, start=BASE + "blog/")
    home = ('<html><head><link rel="alternate" type="application/atom+xml" href="/blog/atom.xml">'
            '<link rel="alternate" type="application/rss+xml" href="http://other.example/feed/"></head></html>')
    found = list(spider._parse_start(feed_response(HtmlResponse, BASE + "blog/", home.encode())))
    assert [r.url for r in found] == [BASE + "blog/atom.xml"], "only on the start's host"
    spider = make_spider(SitemapSpider, start=BASE + "blog/")
    guessed = list(spider._parse_start(feed_response(HtmlResponse, BASE + "blog/", b"<html><p>Hi</p></html>")))
    assert [r.url for r in guessed] == guessed_feeds(BASE + "blog/")
    assert all(r.meta["harvester_probe"] for r in guessed)
    # A guess that is no feed (a catch-all page) is not an invalid sitemap.
    assert list(spider._parse_sitemap(feed_response(HtmlResponse, BASE + "blog/feed", b"<html></html>",
                                                    **guessed[0].meta))) == []
    assert spider.crawler.stats.get_value("harvester/sitemap/invalid") is None


class Engine:
    def __init__(self) -> None:
        self.requests: list[Request] = []

    def crawl(self, request: Request) -> None:
        self.requests.append(request)


def idle(spider: SitemapSpider) -> list[Request]:
    """The requests the spider adds when the crawl goes idle; it stays open exactly when it adds some."""
    engine = spider.crawler.engine = Engine()
    try:
        spider._spider_idle()
    except DontCloseSpider:
        assert engine.requests
    else:
        assert not engine.requests
    return engine.requests


def test_once_idle_the_spider_reads_the_feeds_of_the_start_page_it_has():
    home = b'<html><head><link rel="alternate" type="application/rss+xml" href="/feed/"></head></html>'
    spider = make_spider(SitemapSpider, start=BASE)
    spider.parse(html_response_with_status(BASE, home, 200))
    assert [r.url for r in idle(spider)] == [BASE + "feed/"]
    assert idle(spider) == [], "once"
    # A 304 has no body: the start page is fetched again, past the duplicate filter.
    spider = make_spider(SitemapSpider, start=BASE)
    spider.parse(html_response_with_status(BASE, b"", 304))
    [probe] = idle(spider)
    assert probe.url == BASE and probe.dont_filter and probe.callback == spider._parse_start
    # A start URL that is a sitemap or feed file is all there is to read.
    assert idle(make_spider(SitemapSpider, start=BASE + "atom.xml")) == []


def html_response_with_status(url: str, body: bytes, status: int) -> HtmlResponse:
    return HtmlResponse(url, status=status, body=body, encoding="utf-8", request=Request(url))
