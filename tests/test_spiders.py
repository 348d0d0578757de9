"""Spider logic offline: hand-built responses, no network."""

import pytest
from scrapy.crawler import AsyncCrawlerRunner
from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_reactor_settings

from harvester.addon import HarvesterAddon
from harvester.spiders.docs import DocsSpider
from harvester.spiders.site import SiteSpider
from harvester.spiders.sitemap import SitemapSpider, sitemap_sources
from tests.servers.sites import chain_site

BASE = "http://127.0.0.1:8000/"


def make_spider(cls, **kwargs):
    # As in a real crawl: the spider is built before the settings are applied and frozen.
    runner = AsyncCrawlerRunner({"ADDONS": {HarvesterAddon: 0}, **get_reactor_settings()})
    crawler = runner.create_crawler(cls)
    spider = cls.from_crawler(crawler, **kwargs)
    crawler.spider = spider
    crawler._apply_settings()
    return spider


def html_response(url, body):
    return HtmlResponse(url, body=body.encode() if isinstance(body, str) else body, encoding="utf-8",
                        request=Request(url))


def test_docs_spider_follows_pager_and_sidebar_inside_prefix_once():
    spider = make_spider(DocsSpider, start=BASE + "docs/p1.html")
    page = chain_site()["/docs/p1.html"].body
    urls = [r.url for r in spider.parse(html_response(BASE + "docs/p1.html", page))]
    assert BASE + "docs/p2.html" in urls  # rel=next
    assert BASE + "docs/p5.html" in urls  # sidebar only
    assert BASE + "blog/news.html" not in urls  # outside the path prefix
    assert BASE + "docs/genindex.html" not in urls  # generated index
    assert len(urls) == len(set(urls))
    # The same links on another page schedule nothing new: every URL is claimed once.
    again = [r.url for r in spider.parse(html_response(BASE + "docs/p2.html", page))]
    assert set(again) <= {BASE + "docs/missing.html"}


def test_docs_spider_follows_the_body_only_where_it_knows_no_navigation():
    spider = make_spider(DocsSpider, start=BASE + "manual/")
    plain = ("<html><body><div id='top'><a href='/manual/'>Manual</a></div><div id='page-content'>"
             "<p>Read <a href='install.html'>the install guide</a>.</p></div>"
             "<div id='footer'><a href='/blog/'>Blog</a></div></body></html>")
    urls = [r.url for r in spider.parse(html_response(BASE + "manual/", plain))]
    assert urls == [BASE + "manual/", BASE + "manual/install.html"]  # /blog/ is outside the prefix
    # A page with a recognised content element keeps to it: its footer's links are not followed.
    known = plain.replace("id='page-content'", "role='main'").replace("/blog/", "/manual/footer.html")
    urls = [r.url for r in spider.parse(html_response(BASE + "manual/a.html", known))]
    assert BASE + "manual/footer.html" not in urls


def test_arguments_become_settings():
    spider = make_spider(DocsSpider, start=BASE, max_pages="3", collection="mydocs", content_selector="div#wiki")
    assert spider.settings.getint("HARVESTER_MAX_PAGES") == 3
    assert spider.settings.get("HARVESTER_QDRANT_COLLECTION") == "mydocs"
    assert spider.settings.get("HARVESTER_CONTENT_SELECTOR") == "div#wiki"


def test_allow_and_deny_arguments():
    spider = make_spider(DocsSpider, start=BASE + "docs/p1.html", deny=r"p[2-4]\.html")
    page = chain_site()["/docs/p1.html"].body
    urls = {r.url for r in spider.parse(html_response(BASE + "docs/p1.html", page))}
    assert urls == {BASE + f"docs/p{i}.html" for i in (1, 5, 6)}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({}, "no start URL"), ({"start": "ftp://x/"}, "only http"), ({"start": BASE, "max_pages": "-2"}, "max_pages"),
     ({"start": BASE, "allow": "("}, "invalid URL pattern"),
     ({"start": BASE, "content_selector": "div["}, "invalid CSS selector")],
)
def test_bad_arguments_fail_before_crawling(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DocsSpider(**kwargs)


def test_sitemap_sources():
    assert sitemap_sources("http://h/sitemap_index.xml") == ["http://h/sitemap_index.xml"]
    assert sitemap_sources("http://h/") == ["http://h/robots.txt", "http://h/sitemap.xml"]
    assert sitemap_sources("http://h:81/docs/intro.html") == [
        "http://h:81/robots.txt", "http://h:81/docs/sitemap.xml", "http://h:81/sitemap.xml"]


def test_sitemap_spider_keeps_entries_in_scope():
    spider = make_spider(SitemapSpider, start=BASE + "docs/")

    class Entries(list):
        type = "urlset"

    entries = Entries([{"loc": BASE + "docs/a.html"}, {"loc": BASE + "blog/b.html"},
                       {"loc": "http://other.example/docs/c.html"}, {"loc": BASE + "docs/a.html"}])
    assert [e["loc"] for e in spider.sitemap_filter(entries)] == [BASE + "docs/a.html"]
    index = Entries([{"loc": BASE + "maps/1.xml"}, {"loc": "http://other.example/1.xml"}])
    index.type = "sitemapindex"
    assert [e["loc"] for e in spider.sitemap_filter(index)] == [BASE + "maps/1.xml"]


def test_site_spider_depth_and_scope():
    spider = make_spider(SiteSpider, start=BASE + "docs/", max_depth="1")
    shallow = html_response(BASE + "docs/", "<p>x</p>")
    shallow.meta["depth"] = 0
    deep = html_response(BASE + "docs/a.html", "<p>x</p>")
    deep.meta["depth"] = 1
    assert spider.follow_link(Request(BASE + "docs/b.html"), shallow) is not None
    assert spider.follow_link(Request(BASE + "docs/c.html"), deep) is None
    assert spider.follow_link(Request(BASE + "other/c.html"), shallow) is None
    assert spider.follow_link(Request(BASE + "docs/b.html"), shallow) is None  # claimed already
    with pytest.raises(ValueError, match="max_depth"):
        SiteSpider(start=BASE, max_depth="deep")


def test_the_spiders_parse_each_page_once_with_harvesters_parser():
    """``page_selector`` is ``response.selector`` (cached, so extraction reuses the tree), parsed
    with ``HtmlTreeParser``: lxml.html's classes, looked up in C, so a form is a plain element."""
    import lxml.html
    from scrapy.http import HtmlResponse

    from harvester.spiders._base import page_selector

    body = b"<html><body><form action='/s'><input name='q'></form><p>Text <a href='a.html'>a</a></p></body></html>"
    response = HtmlResponse("http://example.com/docs/", body=body, encoding="utf-8")
    selector = page_selector(response)
    assert selector is response.selector is page_selector(response)
    assert selector.css("a::attr(href)").get() == "a.html"
    assert selector.response is response
    form = selector.root.xpath("//form")[0]
    assert type(form) is lxml.html.HtmlElement  # lxml.html's own parser makes a FormElement
    assert type(HtmlResponse("http://example.com/", body=body).selector.root.xpath("//form")[0]) is lxml.html.FormElement
    assert lxml.html.tostring(selector.root) == lxml.html.tostring(HtmlResponse("http://example.com/", body=body).selector.root)


def test_extraction_lets_go_of_the_tree_it_changed(tmp_path, monkeypatch):
    """The spider's parsed tree serves link extraction and then page extraction, which changes it;
    afterwards the response holds it no more (it was kept alive by Scrapy's selector <-> response
    cycle until the collector ran), and ``response.selector`` parses the page afresh."""
    from harvester.extract.middleware import ExtractionMiddleware
    from tests.crawl import NO_EMBEDDING, crawl
    from tests.servers.sitesrv import SiteServer

    finish = ExtractionMiddleware._finish
    after = []

    async def finishing(self, response, template, prepared=None):
        parsed_before = getattr(response, "_cached_selector", None) is not None
        output = await finish(self, response, template, prepared)
        dropped = getattr(response, "_cached_selector", None) is None
        # The page as served, sidebar included (extraction dropped it from the tree it was given).
        sidebar = bool(response.selector.css("div.sphinxsidebar"))
        after.append((parsed_before, dropped, sidebar))
        return output

    monkeypatch.setattr(ExtractionMiddleware, "_finish", finishing)
    with SiteServer(routes=chain_site()) as server:
        result = crawl("site", server.url + "docs/p1.html", tmp_path, settings=NO_EMBEDDING)
    assert result.returncode == 0, result.output[-3000:]
    assert len(after) >= 5 and after == [(True, True, True)] * len(after)
