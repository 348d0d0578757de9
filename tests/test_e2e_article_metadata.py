"""Article metadata end to end: a small blog crawled for real, each post's author and dates in the
feed and the points, then ``scrapy search --json`` filtered by date and sorted newest first."""

from __future__ import annotations

import json

import pytest

from tests.crawl import crawl, scrapy_command
from tests.servers.sitesrv import Route, SiteServer

pytestmark = pytest.mark.e2e

TEXT = ("<p>Sourdough needs a lively starter, flour, water and salt. We fold the dough every half hour "
        "and bake it in a hot covered pot, then let it cool before slicing. {topic}</p>")


def post(title: str, head: str = "", header: str = "", topic: str = "") -> Route:
    body = "".join(TEXT.format(topic=f"This post is about {topic}, part {n}.") for n in range(4))
    return Route(f"<!doctype html><html lang=en><head><title>{title} | Crumbs</title>{head}</head><body>"
                 f'<nav><a href="/blog/">Blog</a></nav><article><header><h1>{title}</h1>{header}</header>'
                 f"{body}</article><footer>Crumbs blog</footer></body></html>", headers={"Content-Type": "text/html"})


def blog() -> dict[str, Route]:
    ld = {"@context": "https://schema.org", "@type": "BlogPosting", "headline": "Starter care",
          "datePublished": "2024-01-10T08:00:00+01:00", "dateModified": "2024-02-01",
          "author": [{"@type": "Person", "name": "Ada Baker"}, {"@type": "Person", "name": "Bo Crust"}]}
    links = "".join(f'<li><a href="/blog/{slug}.html">{slug}</a></li>' for slug in ("starter", "shaping", "scoring"))
    return {
        "/robots.txt": Route("User-agent: *\nDisallow:\n"),
        "/blog/": Route("<!doctype html><html lang=en><head><title>Crumbs</title></head><body><h1>Crumbs</h1>"
                        f"<p>{TEXT.format(topic='All our sourdough posts.')}</p><ul>{links}</ul></body></html>",
                        headers={"Content-Type": "text/html"}),
        "/blog/starter.html": post("Starter care", f'<script type="application/ld+json">{json.dumps(ld)}</script>',
                                   topic="feeding the starter"),
        "/blog/shaping.html": post("Shaping loaves", '<meta property="article:published_time" '
                                   'content="2023-06-05T12:00:00Z"><meta name="author" content="Cy Loaf">',
                                   topic="shaping a boule"),
        "/blog/scoring.html": post("Scoring the dough", header='<time class="entry-date published" '
                                   'datetime="2024-09-30">30 September</time>', topic="scoring patterns"),
    }


def test_blog_dates_reach_the_feed_and_search_filters_and_sorts_by_them(tmp_path, tiny_model):
    model = f"HARVESTER_EMBEDDING_MODEL={tiny_model}"
    with SiteServer(routes=blog()) as server:
        result = crawl("site", server.url + "blog/", tmp_path, settings={"HARVESTER_EMBEDDING_MODEL": tiny_model})
    assert result.returncode == 0, result.output[-3000:]
    items = {item["url"].rsplit("/", 1)[1]: item for item in result.items}
    assert {name: (item["author"], item["published"], item["modified"]) for name, item in items.items()} == {
        "": (None, None, None),
        "starter.html": ("Ada Baker, Bo Crust", "2024-01-10T07:00:00Z", "2024-02-01"),
        "shaping.html": ("Cy Loaf", "2023-06-05T12:00:00Z", None),
        "scoring.html": (None, "2024-09-30", None),
    }

    def search(*options: str) -> list[dict]:
        process = scrapy_command(["search", "--json", "-k", "10", *options, "-s", model, "sourdough starter"],
                                 tmp_path)
        assert process.returncode == 0, process.stderr[-2000:]
        return json.loads(process.stdout)

    every = search()
    assert len(every) == 4
    # Undated pages (the index) are outside any date range; the bounds are inclusive days.
    since = search("--since", "2024-01-01")
    assert sorted(hit["url"].rsplit("/", 1)[1] for hit in since) == ["scoring.html", "starter.html"]
    until = search("--until", "2023-06-05")
    assert [hit["url"].rsplit("/", 1)[1] for hit in until] == ["shaping.html"]
    newest = search("--sort", "date")
    assert [hit["url"].rsplit("/", 1)[1] for hit in newest] == ["scoring.html", "starter.html", "shaping.html", ""]
    assert newest[1]["author"] == "Ada Baker, Bo Crust" and newest[1]["modified"] == "2024-02-01"

    bad = scrapy_command(["search", "--json", "--since", "last week", "-s", model, "sourdough"], tmp_path)
    assert bad.returncode != 0 and "not a date" in bad.stderr
