"""A dropped page is one line of the log, with its URL and the reason; its Markdown and chunks are
not logged, at any level."""

from __future__ import annotations

import logging

from scrapy.exceptions import DropItem
from scrapy.utils.test import get_crawler

from harvester.exceptions import DuplicatePage
from harvester.items import PageItem
from harvester.logformatter import HarvesterLogFormatter
from tests.crawl import NO_EMBEDDING, crawl
from tests.servers.sitesrv import SiteServer

WORDS = "Words of the guide that only this page holds, enough of them to be a page of its own. " * 20


def test_a_duplicate_is_logged_as_one_line_without_its_markdown(tmp_path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    page = ("<html><head><title>Guide</title></head><body><main><h1>The guide</h1><p>" + WORDS
            + "</p></main></body></html>")
    (site / "index.html").write_text(
        "<html><head><title>Index</title></head><body><main><h1>The index</h1><p>"
        + "Words of the index page, enough of them to be a page of their own. " * 20
        + '</p><a href="guide.html">guide</a> <a href="copy.html">copy</a></main></body></html>')
    (site / "guide.html").write_text(page)
    (site / "copy.html").write_text(page)
    with SiteServer(root=site) as server:
        result = crawl("site", server.url + "index.html", tmp_path, settings=NO_EMBEDDING)
    assert result.returncode == 0, result.output
    assert sorted(item["title"] for item in result.items) == ["Guide", "Index"]
    drops = [line for line in result.output.splitlines() if "Dropped" in line]
    assert len(drops) == 1, result.output
    assert "INFO" in drops[0] and "same content as" in drops[0]
    assert server.url + "copy.html" in drops[0] or server.url + "guide.html" in drops[0]
    assert "only this page holds" not in result.output


def test_the_level_is_the_drop_reasons_and_the_url_is_named_once() -> None:
    crawler = get_crawler(settings_dict={"LOG_FORMATTER": "harvester.logformatter.HarvesterLogFormatter"})
    formatter = HarvesterLogFormatter.from_crawler(crawler)
    item = PageItem(url="http://site.test/copy.html", title="Copy", markdown="# Markdown " + WORDS)
    spider = type("Spider", (), {"crawler": crawler})()
    same = formatter.dropped(item, DuplicatePage("same content as http://site.test/a.html: "
                                                 "http://site.test/copy.html", log_level="INFO"), None, spider)
    assert same["level"] == logging.INFO
    assert same["msg"] % same["args"] == ("Dropped: same content as http://site.test/a.html: "
                                          "http://site.test/copy.html")
    other = formatter.dropped(item, DropItem("no price"), None, spider)
    assert other["level"] == logging.getLevelName(crawler.settings["DEFAULT_DROPITEM_LOG_LEVEL"])
    assert other["msg"] % other["args"] == "Dropped http://site.test/copy.html: no price"
    assert "Markdown" not in str(same) + str(other)
