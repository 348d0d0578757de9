"""Version detection (harvester.versions.detect): from URLs, generator output and the files beside
the pages; the newest stable version."""

from __future__ import annotations

import re

import pytest

from harvester.versions.detect import (
    mike_aliases,
    newest_stable,
    options_js_version,
    page_version,
    stated_version,
    url_version,
    version_neutral_hash,
    version_root,
    versions_json_url,
)


def test_the_same_page_in_two_versions_is_the_same_text_whatever_folder_it_links_into() -> None:
    assert version_root("https://docs.example.org/en/3.2/topics/db/models.html") == "https://docs.example.org/en/3.2/"
    assert version_root("https://example.org/docs/next/intro") == "https://example.org/docs/next/"
    assert version_root("https://example.org/guide/intro.html") is None
    text = "See [models](https://docs.example.org/en/{v}/topics/db/models.html) and [4.2 notes](https://x.org/4.2/)."
    old, new = version_root("https://docs.example.org/en/4.2/a.html"), version_root("https://docs.example.org/en/5.0/a.html")
    assert old and new
    assert version_neutral_hash(text.format(v="4.2"), old) == version_neutral_hash(text.format(v="5.0"), new)
    assert version_neutral_hash(text.format(v="4.2"), old) != version_neutral_hash(text.format(v="4.1"), new)


def test_url_versions() -> None:
    assert url_version("https://docs.example.org/en/3.2/topics/db/") == "3.2"
    assert url_version("https://example.org/v2/guide/intro/") == "2"
    assert url_version("https://example.org/docs/next/intro") == "next"
    assert url_version("https://example.org/docs/2.x/intro") == "2.x"
    assert url_version("https://docs.python.org/3/library/os.html") == "3"
    assert url_version("https://example.org/en/stable/index.html") == "stable"
    assert url_version("https://example.org/1.0.0rc1/api/") == "1.0.0rc1"
    # Not versions: dates, pagination, a page named like an alias, plain folders.
    assert url_version("https://blog.example.org/2024/05/post/") is None
    assert url_version("https://example.org/blog/page/2/") is None
    assert url_version("https://example.org/guide/dev") is None
    assert url_version("https://example.org/dev/") is None  # a page about development, not a version
    assert url_version("https://example.org/guide/setup/") is None
    assert url_version("https://example.org/r/12/x", re.compile(r"/r/(?P<version>\d+)/")) == "12"


def test_stated_versions() -> None:
    assert stated_version('<head><meta name="docsearch:version" content="2.1"></head>') == "2.1"
    assert stated_version('<meta name="readthedocs-version-slug" content="stable">') == "stable"
    assert stated_version("<script>var DOCUMENTATION_OPTIONS = {URL_ROOT: '', VERSION: '4.2.1'}</script>") == "4.2.1"
    assert stated_version('<script>READTHEDOCS_DATA = {"project": "x", "version": "latest"}</script>') == "latest"
    # A number beats an alias wherever each is written.
    html = '<meta name="readthedocs-version-slug" content="stable"><script>DOCUMENTATION_OPTIONS={VERSION:"5.0"}</script>'
    assert stated_version(html) == "5.0"
    assert stated_version("<p>VERSION: '1.0' in the text far below</p>".rjust(20_000)) is None


def test_page_version_resolution() -> None:
    assert page_version("http://h/en/stable/a.html", "", declared="v3.1").version == "3.1"
    assert page_version("http://h/docs/next/intro", '<meta name="docsearch:version" content="current">').version == "next"
    assert page_version("http://h/docs/intro", '<meta name="docsearch:version" content="3.1">').version == "3.1"
    # Sphinx behind an alias: the page's options script says which version it serves.
    sphinx = page_version("http://h/en/stable/api.html",
                          '<script id="documentation_options" src="_static/documentation_options.js"></script>')
    assert sphinx.version == "stable" and sphinx.resolve_at == "http://h/en/stable/_static/documentation_options.js"
    assert options_js_version("var DOCUMENTATION_OPTIONS = {\n    VERSION: '5.0.2',\n}") == "5.0.2"
    # mike: versions.json at the root of the version folders.
    mike = page_version("http://h/latest/guide/", "")
    assert mike.version == "latest" and mike.resolve_at == "http://h/versions.json"
    assert versions_json_url("http://h/1.0/x/", "1.0") == "http://h/versions.json"
    assert mike_aliases('[{"version": "2.0", "title": "2.0", "aliases": ["latest"]},'
                        ' {"version": "1.0", "aliases": []}]') == {"latest": "2.0"}
    assert mike_aliases("not json") == {}
    assert page_version("http://h/guide/", "<p>x</p>").version is None


def test_newest_stable() -> None:
    assert newest_stable(["3.9", "3.10", "3.11rc1", "dev", "next"]) == "3.10"
    assert newest_stable(["next", "latest"]) is None
    assert newest_stable(["stable", "next", "1.2"]) == "1.2"
    assert newest_stable(["stable", "next"]) == "stable"


def test_dedup_within_a_version_and_shared_across_versions() -> None:
    import asyncio

    from scrapy.utils.misc import build_from_crawler

    from harvester.dedup.pipeline import DedupPipeline
    from harvester.exceptions import DuplicatePage, NearDuplicatePage
    from harvester.signals import page_versioned
    from tests.components import crawler_with, page

    crawler = crawler_with(HARVESTER_NEAR_DUPLICATE_MODE="drop", HARVESTER_VERSIONS_APART=True)
    pipeline = build_from_crawler(DedupPipeline, crawler)
    shared: list[tuple[str, str]] = []
    crawler.signals.connect(lambda url, version, **_: shared.append((url, version)), signal=page_versioned, weak=False)
    text = " ".join(f"word{n}" for n in range(300))

    def versioned(url: str, version: str, markdown: str, content_hash: str):
        item = page(url=url, markdown=markdown, content_hash=content_hash)
        item.version, item.versions = version, [version]
        return item

    first = asyncio.run(pipeline.process_item(versioned("http://h/4.2/a.html", "4.2", text, "h1")))
    # The same text in 5.0: not stored again, but 5.0 is one of the stored page's versions.
    with pytest.raises(DuplicatePage):
        asyncio.run(pipeline.process_item(versioned("http://h/5.0/a.html", "5.0", text, "h1")))
    assert first.versions == ["4.2", "5.0"] and shared == [("http://h/4.2/a.html", "5.0")]
    # Nearly the same text in 6.0 is 6.0's page (near duplicates are dropped only within a version).
    kept = asyncio.run(pipeline.process_item(versioned("http://h/6.0/a.html", "6.0", text + " word", "h2")))
    assert kept.near_duplicate_of is None
    with pytest.raises(NearDuplicatePage):
        asyncio.run(pipeline.process_item(versioned("http://h/6.0/b.html", "6.0", text + " other", "h3")))
