"""Crawls of real blog themes: the same three posts built by Hugo with PaperMod, Ananke, Mainroad,
Beautiful Hugo, Coder and Stack, and by Jekyll with minima (``tests/fixtures/blogs/``, built by its
``build.py`` and committed). Hugo
writes its generator meta on every page, blogs included: these must be read as blogs, not as a
documentation theme. Each crawl (``site``) stores the posts and nothing else (the home, post list
and tag pages are listings, followed and not stored), and each post's Markdown is its source's
text, without the theme's title block, byline, reading time, share links, tags or post navigation.
Every expectation comes from the posts' Markdown sources, not from the themes' HTML."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from tests.crawl import NO_EMBEDDING, CrawlResult, crawl
from tests.servers.sitesrv import SiteServer

pytestmark = pytest.mark.e2e

BLOGS = Path(__file__).resolve().parent / "fixtures" / "blogs"
POSTS = {  # slug -> (title, date)
    "security-releases": ("Our security release process", "2024-03-12"),
    "streaming": ("Streaming our meetings to YouTube", "2024-02-11"),
    "internal-errors": ("Using internal errors", "2024-04-13"),
}
HUGO_LISTINGS = {"/", "/posts/", "/tags/engineering/", "/tags/process/"}
SITES = {  # site -> (each post's path, the listings among its pages)
    "hugo-papermod": ("/posts/{slug}/", HUGO_LISTINGS),
    "hugo-ananke": ("/posts/{slug}/", HUGO_LISTINGS),
    "hugo-mainroad": ("/posts/{slug}/", HUGO_LISTINGS),
    "hugo-beautifulhugo": ("/posts/{slug}/", {"/", "/posts/", "/tags/"}),
    # Their home pages show no post: navigation only.
    "hugo-coder": ("/posts/{slug}/", HUGO_LISTINGS - {"/"}),
    "hugo-stack": ("/posts/{slug}/", HUGO_LISTINGS - {"/"}),
    "jekyll-minima": ("/{date}/{slug}.html", {"/"}),
}
def words(text: str) -> str:
    """The text's words, lower case, with link targets left out."""
    return " ".join(re.findall(r"[a-z0-9]+", re.sub(r"\]\([^)]*\)", "]", text).lower()))


def source(slug: str) -> str:
    """The post as its author wrote it, less its front matter, HTML comments, link reference
    definitions and images (an article's photos are left out of its Markdown by design)."""
    text = (BLOGS / "src" / "posts" / f"{slug}.md").read_text(encoding="utf-8").split("---\n", 2)[2]
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"^\[[^\]]+\]:\s+\S+.*$", "", text, flags=re.M)
    return re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)


@cache
def crawled(site: str, tmp: Path) -> tuple[CrawlResult, str]:
    with SiteServer(root=BLOGS / "site" / site) as server:
        result = crawl("site", server.url, tmp, settings=NO_EMBEDDING, timeout=180)
    return result, server.url.rstrip("/")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("blogs")


@pytest.mark.parametrize("site", SITES)
def test_a_blog_stores_its_posts_and_follows_its_listings(site: str, workdir: Path) -> None:
    result, base = crawled(site, workdir / site)
    assert result.returncode == 0, result.output[-3000:]
    post_path, listings = SITES[site]
    expected = {post_path.format(slug=slug, date=date.replace("-", "/")) for slug, (_, date) in POSTS.items()}
    assert {item["url"].removeprefix(base) for item in result.items} == expected
    skipped = {url.removeprefix(base) for url in result.report["skipped"].get("listing", [])}
    assert listings <= skipped, skipped


@pytest.mark.parametrize("site", SITES)
def test_a_post_is_its_source_text_and_nothing_else(site: str, workdir: Path) -> None:
    result, _ = crawled(site, workdir / site)
    for item in result.items:
        slug = re.sub(r"\.html$", "", item["url"].rstrip("/").rsplit("/", 1)[-1])
        title, date = POSTS[slug]
        assert item["title"] == title
        assert item["published"].startswith(date), item["published"]
        markdown = item["markdown"]
        written = words(source(slug))
        # Every line the author wrote is there (the steps' nested lists of links too) ...
        lost = [line for line in source(slug).splitlines() if words(line) and words(line) not in words(markdown)]
        assert not lost, (site, slug, lost)
        # ... and every line of the Markdown is the author's: no byline, date, reading time or share box.
        added = [line for line in markdown.splitlines() if words(line) and words(line) not in written]
        assert not added, (site, slug, added)
        assert "Jane Doe" not in markdown  # the byline: the author is metadata
        assert not markdown.startswith(("# ", title)), markdown[:200]
        assert "```js" in markdown or slug != "internal-errors"
