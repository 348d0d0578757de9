"""Crawls of real blog themes: the same three posts built by Hugo with PaperMod, Ananke, Mainroad,
Beautiful Hugo, Coder and Stack, by Jekyll with minima, by Pelican with notmyidea and simple, by Hexo
with landscape and by Eleventy's starter blog (``tests/fixtures/blogs/``, built by its ``build.py``
and committed). Most Hugo themes write Hugo's generator meta, blogs' too: these must be read as
blogs, not as a documentation theme. Each crawl (``site``) stores the posts and nothing else (the
home, post list and tag pages are listings, followed and not stored), and each post's Markdown is
its source's text, without the theme's title block, byline, reading time, share links, tags or post
navigation, with its date and author. Every expectation comes from the posts' Markdown sources, not
from the themes' HTML."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from tests.blogs import BLOGS, NO_AUTHOR, POSTS, SITES, UNLABELLED_CODE, lost_and_added, post_paths
from tests.crawl import NO_EMBEDDING, CrawlResult, crawl
from tests.servers.sitesrv import SiteServer

pytestmark = pytest.mark.e2e


@cache
def crawled(site: str, tmp: Path) -> tuple[CrawlResult, str]:
    with SiteServer(root=BLOGS / "site" / site) as server:
        # AutoThrottle's first delays would be most of these crawls' time; politeness has its own tests.
        result = crawl("site", server.url, tmp, settings={**NO_EMBEDDING, "AUTOTHROTTLE_ENABLED": "0"}, timeout=180)
    return result, server.url.rstrip("/")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("blogs")


@pytest.mark.parametrize("site", SITES)
def test_a_blog_stores_its_posts_and_follows_its_listings(site: str, workdir: Path) -> None:
    result, base = crawled(site, workdir / site)
    assert result.returncode == 0, result.output[-3000:]
    paths = post_paths(site)
    assert {item["url"].removeprefix(base) for item in result.items} == set(paths)
    skipped = {url.removeprefix(base) for url in result.report["skipped"].get("listing", [])}
    assert SITES[site][1] <= skipped, skipped


@pytest.mark.parametrize("site", SITES)
def test_a_post_is_its_source_text_and_nothing_else(site: str, workdir: Path) -> None:
    result, base = crawled(site, workdir / site)
    paths = post_paths(site)
    for item in result.items:
        slug = paths[item["url"].removeprefix(base)]
        title, date = POSTS[slug]
        assert item["title"] == title
        assert item["published"].startswith(date), item["published"]
        markdown = item["markdown"]
        # Every line the author wrote is there (the steps' nested lists of links too), and every line
        # of the Markdown is the author's: no byline, date, reading time or share box.
        lost, added = lost_and_added(markdown, slug)
        assert not lost, (site, slug, lost)
        assert not added, (site, slug, added)
        assert "Jane Doe" not in markdown  # the byline: the author is metadata
        if site in NO_AUTHOR:
            assert item["author"] in (None, "Jane Doe"), item["author"]
        else:
            assert item["author"] == "Jane Doe", item["author"]
        assert not markdown.startswith(("# ", title)), markdown[:200]
        assert slug != "internal-errors" or ("```" if site in UNLABELLED_CODE else "```js") in markdown
