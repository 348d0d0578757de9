"""The sitemap spider on a blog with no sitemap: every post is found through the feeds the home page
declares (RSS paged the WordPress way, Atom with rel=next to a gzipped page), and a re-crawl skips
the posts whose feed date is not newer than their harvest. Real crawls on loopback."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.crawl import crawl
from tests.servers.blog_site import POSTS, Blog
from tests.servers.sitesrv import SiteServer

NO_RECRAWL_EXTRAS = {"HARVESTER_CONDITIONAL_REQUESTS": 0}


@pytest.mark.e2e
def test_a_blog_is_crawled_through_its_feeds_and_recrawled_by_their_dates(tmp_path, tiny_model):
    blog = Blog()
    settings = {"HARVESTER_EMBEDDING_MODEL": tiny_model, **NO_RECRAWL_EXTRAS}
    with SiteServer(dynamic=blog.resolve) as server:
        blog.base = server.url.rstrip("/")
        first = crawl("sitemap", server.url, tmp_path, settings=settings)
        first_paths = server.paths()
        blog.dates[5] = datetime(2999, 1, 1, tzinfo=UTC)
        # Learning off: it would fetch a stored post whole to learn the template from
        # (tests/test_e2e_template.py); this test counts the fetches the feed dates save.
        second = crawl("sitemap", server.url, tmp_path, settings={**settings, "HARVESTER_TEMPLATE_LEARNING": 0})
        second_paths = server.paths()[len(first_paths):]

    assert first.returncode == 0, first.output[-3000:]
    assert sorted(item["url"] for item in first.items) == sorted(blog.url(n) for n in POSTS)
    assert {"/feed/", "/feed/?paged=2", "/feed/?paged=3", "/atom.xml", "/atom-2.xml.gz"} <= set(first_paths)
    assert "/comments/feed/" not in first_paths
    assert not [p for p in first_paths if p.startswith(("/feed.xml", "/rss.xml", "/index.xml"))], \
        "no guessing where the home page declares its feeds"
    assert first.report["failed"] == {}, "a missing page past the feed's last is no failure"
    assert first.report["recrawl"]["new"] == len(POSTS)

    assert second.returncode == 0, second.output[-3000:]
    assert second.report["recrawl"]["sitemap_lastmod_skipped"] == len(POSTS) - 1
    assert [p for p in second_paths if p.startswith("/2025/")] == ["/2025/01/post-5/"]
    assert [item["url"] for item in second.items] == [blog.url(5)]
    assert second.report["recrawl"]["pruned"] == 0, "a post skipped by its feed date is reached"
