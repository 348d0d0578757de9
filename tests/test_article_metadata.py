"""Article metadata: author, published and modified dates from JSON-LD, meta tags, microdata and
<time>, normalised to ISO 8601 (harvester.extract.metadata)."""
from __future__ import annotations

import json

import lxml.html
import pytest

from harvester.extract.metadata import article_metadata, iso_date
from harvester.extract.page import extract_page

BODY = "<p>" + "An article about parsing dates in crawled pages, with enough words to be kept. " * 8 + "</p>"


def page(head: str = "", body: str = "") -> str:
    return f"<html><head><title>Post</title>{head}</head><body>{body or '<article><h1>Post</h1>' + BODY + '</article>'}</body></html>"


def meta_of(html: str) -> dict:
    return article_metadata(lxml.html.document_fromstring(html))


def jsonld(data: object) -> str:
    return f'<script type="application/ld+json">{json.dumps(data)}</script>'


@pytest.mark.parametrize(("raw", "iso"), [
    ("2024-03-05", "2024-03-05"),
    ("20240305", "2024-03-05"),
    ("2024/03/05", "2024-03-05"),
    ("2024-03-05T10:30:00+01:00", "2024-03-05T09:30:00Z"),
    ("2024-03-05T23:30:00-0200", "2024-03-06T01:30:00Z"),
    ("2024-03-05T10:30:00.123Z", "2024-03-05T10:30:00Z"),
    ("2024-03-05T10:30", "2024-03-05T10:30:00"),
    ("2024-03-05 10:30:00", "2024-03-05T10:30:00"),
    ("Tue, 05 Mar 2024 10:30:00 GMT", "2024-03-05T10:30:00Z"),
    ("  2024-03-05T10:30:00Z ", "2024-03-05T10:30:00Z"),
    ("yesterday", None), ("2024", None), ("", None), (None, None), ("0001-01-01", None),
])
def test_iso_date(raw: str | None, iso: str | None) -> None:
    assert iso_date(raw) == iso


def test_jsonld_article_with_author_object() -> None:
    html = page(jsonld({"@context": "https://schema.org", "@type": "BlogPosting", "headline": "Post",
                        "datePublished": "2024-03-05T10:00:00+01:00", "dateModified": "2024-04-01",
                        "author": {"@type": "Person", "name": "Ada Lovelace"}}))
    assert meta_of(html) == {"author": "Ada Lovelace", "published": "2024-03-05T09:00:00Z", "modified": "2024-04-01"}


def test_jsonld_graph_with_author_reference_and_list() -> None:
    graph = {"@context": "https://schema.org", "@graph": [
        {"@type": "WebPage", "@id": "https://blog.test/p#page", "datePublished": "2020-01-01"},
        {"@type": ["Article", "TechArticle"], "datePublished": "2024-03-05",
         "author": [{"@id": "https://blog.test/#ada"}, "Grace Hopper", {"name": "Ada Lovelace"}]},
        {"@type": "Person", "@id": "https://blog.test/#ada", "name": "Ada Lovelace"},
    ]}
    found = meta_of(page(jsonld(graph)))
    # The Article's date wins over the WebPage's; the author list is deduplicated, in order.
    assert found == {"author": "Ada Lovelace, Grace Hopper", "published": "2024-03-05", "modified": None}


def test_jsonld_of_another_type_fills_what_the_article_lacks() -> None:
    html = page(jsonld({"@type": "WebPage", "dateModified": "2024-06-01"}) + jsonld("not an object")
                + '<script type="application/ld+json">{broken</script>'
                + jsonld({"@type": "NewsArticle", "datePublished": "2024-05-01", "author": "Reporter"}))
    assert meta_of(html) == {"author": "Reporter", "published": "2024-05-01", "modified": "2024-06-01"}


def test_open_graph_meta_tags() -> None:
    html = page('<meta property="article:published_time" content="2024-03-05T08:00:00Z">'
                '<meta property="article:modified_time" content="2024-03-06T08:00:00+00:00">'
                '<meta property="article:author" content="https://facebook.com/someone">'
                '<meta name="author" content="Jane Doe">')
    # article:author is a profile URL here: the name comes from name=author.
    assert meta_of(html) == {"author": "Jane Doe", "published": "2024-03-05T08:00:00Z",
                             "modified": "2024-03-06T08:00:00Z"}


@pytest.mark.parametrize(("head", "published", "modified"), [
    ('<meta name="date" content="2023-11-02">', "2023-11-02", None),
    ('<meta name="DC.date" content="2023-11-02">', "2023-11-02", None),
    ('<meta name="dcterms.issued" content="2023-11-02"><meta name="dcterms.modified" content="2023-12-01">',
     "2023-11-02", "2023-12-01"),
    ('<meta property="og:updated_time" content="2023-12-01T10:00:00+00:00">', None, "2023-12-01T10:00:00Z"),
])
def test_date_meta_tags(head: str, published: str | None, modified: str | None) -> None:
    found = meta_of(page(head))
    assert (found["published"], found["modified"]) == (published, modified)


def test_jsonld_wins_over_meta_tags() -> None:
    html = page('<meta property="article:published_time" content="2020-01-01">'
                + jsonld({"@type": "Article", "datePublished": "2024-03-05"}))
    assert meta_of(html)["published"] == "2024-03-05"


def test_microdata_skips_the_comments() -> None:
    body = ('<article itemscope itemtype="https://schema.org/BlogPosting"><h1>Post</h1>'
            '<div itemprop="comment" itemscope itemtype="https://schema.org/Comment">'
            '<span itemprop="author">Troll</span><time itemprop="datePublished" datetime="2025-01-01">x</time></div>'
            '<span itemprop="author" itemscope itemtype="https://schema.org/Person"><span itemprop="name">Ada'
            '  Lovelace</span></span><meta itemprop="datePublished" content="2024-03-05">'
            '<time itemprop="dateModified" datetime="2024-03-07T12:00:00+02:00">7 March</time>' + BODY + "</article>")
    assert meta_of(page(body=body)) == {"author": "Ada Lovelace", "published": "2024-03-05",
                                        "modified": "2024-03-07T10:00:00Z"}


def test_time_in_the_article_header_as_last_resort() -> None:
    body = ('<article><header><h1>Post</h1><time class="entry-date published" datetime="2024-03-05T10:00:00+00:00">'
            'March 5</time><time class="updated" datetime="2024-03-09T10:00:00+00:00">March 9</time></header>'
            + BODY + '<footer><time datetime="2019-01-01">old</time></footer></article>')
    assert meta_of(page(body=body)) == {"author": None, "published": "2024-03-05T10:00:00Z",
                                        "modified": "2024-03-09T10:00:00Z"}


def test_time_outside_a_header_is_not_a_date_of_the_page() -> None:
    body = "<article><h1>Post</h1>" + BODY + '<p>Released <time datetime="2019-01-01">then</time></p></article>'
    assert meta_of(page(body=body)) == {"author": None, "published": None, "modified": None}


def test_time_in_a_single_post_metadata_block() -> None:
    """Material for MkDocs' blog puts a post's date in its sidebar (``md-post__meta``); WordPress
    block themes in ``wp-block-post-date`` beside the title, outside any header."""
    meta = ('<nav><ul class="md-post__meta md-nav__list"><li><time datetime="2024-02-11 00:00:00+00:00">'
            "February 11, 2024</time></li></ul></nav>")
    body = meta + "<article><h1>Post</h1>" + BODY + "</article>"
    assert meta_of(page(body=body))["published"] == "2024-02-11T00:00:00Z"
    eleventy = '<ul class="post-metadata"><li><time datetime="2024-04-13">13 April 2024</time></li></ul>'
    assert meta_of(page(body="<h1>Post</h1>" + eleventy + BODY))["published"] == "2024-04-13"
    # Two posts' metadata (a related-posts box): neither is surely the page's.
    related = "".join(f'<div class="post-meta"><time datetime="20{n}-01-01">then</time></div>' for n in (10, 12))
    assert meta_of(page(body="<article><h1>Post</h1>" + BODY + "</article>" + related))["published"] is None


def test_date_and_author_in_the_article_footer() -> None:
    """Pelican's themes: the date in the article's footer, as <time datetime> (simple) or hAtom's
    <abbr class="published" title> (notmyidea), the author in its <address>; a comment's date is
    not the page's."""
    simple = ("<article><header><h2>Post</h2></header>" + BODY + '<footer><p>Published: <time '
              'datetime="2024-02-11T09:00:00+00:00">Sun 11 February 2024</time></p><address>By <a '
              'href="./author/jane-doe.html">Jane Doe</a></address></footer></article>')
    assert meta_of(page(body=simple)) == {"author": "Jane Doe", "published": "2024-02-11T09:00:00Z", "modified": None}
    hatom = ('<article><header><h1 class="entry-title">Post</h1></header><div class="entry-content"><footer '
             'class="post-info"><abbr class="published" title="2024-02-11T09:00:00+00:00">Sun 11 February 2024'
             "</abbr></footer>" + BODY + "</div></article>")
    assert meta_of(page(body=hatom))["published"] == "2024-02-11T09:00:00Z"
    comment = ("<article><h1>Post</h1>" + BODY + '</article><ol class="comment-list"><li><article class="comment-body">'
               '<footer class="comment-meta"><time datetime="2020-11-01T03:32:06+01:00">then</time></footer>'
               "<p>Nice.</p></article></li></ol>")
    assert meta_of(page(body=comment))["published"] is None


def test_author_from_a_byline_link() -> None:
    """A help centre's article header links its author's profile (Zendesk's Copenhagen theme); a
    WordPress byline says rel="author"; a comment's author is not the article's."""
    zendesk = ('<article><header class="article-header"><h1>Post</h1><div class="article-author"><div class="article-meta">'
               '<a href="/hc/en-us/profiles/42-Jane-Doe">Jane Doe</a><div class="meta-group">Updated</div></div></div>'
               "</header>" + BODY + "</article>")
    assert meta_of(page(body=zendesk))["author"] == "Jane Doe"
    byline = ('<article><h1>Post</h1><div class="entry-meta">by <a class="url fn n" rel="author" href="/?p=1">Ada Lee'
              "</a></div>" + BODY + "</article>")
    assert meta_of(page(body=byline))["author"] == "Ada Lee"
    comments = ("<article><h1>Post</h1>" + BODY + '</article><div id="comments"><header><h1>Replies</h1>'
                '<a rel="author" href="/author/bob/">Bob</a></header></div>')
    assert meta_of(page(body=comments))["author"] is None
    # Two authors' links outside a header (a related-posts box): neither is surely the page's.
    related = "".join(f'<p><a rel="author" href="/author/{n}/">{n.title()} Smith</a></p>' for n in ("ann", "bo"))
    assert meta_of(page(body="<article><h1>Post</h1>" + BODY + "</article>" + related))["author"] is None


def test_extract_page_carries_the_metadata() -> None:
    html = page(jsonld({"@type": "BlogPosting", "datePublished": "2024-03-05", "author": {"name": "Ada"}}))
    extracted = extract_page(html, "https://blog.test/post")
    assert (extracted.author, extracted.published, extracted.modified) == ("Ada", "2024-03-05", None)
    assert "Ada" not in extracted.markdown


# -- Searching by date: both embedded engines' filters, the sort, the MCP service's arguments. --

DATED = {  # url -> (published, modified)
    "http://blog.test/new.html": ("2024-09-30", None),
    "http://blog.test/zoned.html": ("2024-03-05T23:30:00Z", "2024-04-01"),
    "http://blog.test/edited.html": (None, "2024-03-01T10:00:00Z"),
    "http://blog.test/old.html": ("2023-06-05T12:00:00Z", None),
    "http://blog.test/undated.html": (None, None),
}


@pytest.fixture(scope="module")
def dated_service(tmp_path_factory, tiny_model):
    from harvester.embedding.models import load_embedder
    from harvester.index.engines import open_store
    from harvester.index.store import chunk_point
    from harvester.mcp_server.core import SearchService

    embedder = load_embedder(tiny_model)
    services = {}
    for engine in ("edge", "local"):
        store = open_store(None, None, str(tmp_path_factory.mktemp(engine)), engine)
        store.ensure_collection("c", embedder.vector_name, embedder.dimension)
        text = "Baking sourdough bread at home."
        vector = embedder.encode([text], batch_size=1)[0]
        store.upsert("c", [
            chunk_point(f"00000000-0000-0000-0000-00000000000{i}", embedder.vector_name, vector, text,
                        {"page_content": text, "metadata": {"source_url": url, "chunk_index": 0, "headings": [],
                                                            "published": published, "modified": modified}})
            for i, (url, (published, modified)) in enumerate(DATED.items())])
        services[engine] = SearchService(store, embedder, "c")
    yield services
    for service in services.values():
        service.close()


def names(hits: list[dict]) -> list[str]:
    return [hit["url"].rsplit("/", 1)[1].removesuffix(".html") for hit in hits]


@pytest.mark.parametrize("engine", ["edge", "local"])
@pytest.mark.parametrize(("since", "until", "found"), [
    ("2024-03-01", None, ["edited", "new", "zoned"]),
    # A modified date counts only when the page states no published date.
    ("2024-03-31", "2024-04-30", []),
    (None, "2024-03-05", ["edited", "old", "zoned"]),
    ("2024-03-06T00:30:00+01:00", "2024-03-06", ["zoned"]),
    ("2023-06-05T12:00:00Z", "2023-06-05T12:00:00Z", ["old"]),
])
def test_search_filters_by_the_pages_date(dated_service, engine, since, until, found):
    hits = dated_service[engine].search("sourdough", k=10, since=since, until=until)
    assert sorted(names(hits)) == found


@pytest.mark.parametrize("engine", ["edge", "local"])
def test_search_sorts_newest_first_with_undated_pages_last(dated_service, engine):
    hits = dated_service[engine].search("sourdough", k=10, sort="date")
    assert names(hits) == ["new", "zoned", "edited", "old", "undated"]
    assert (hits[1]["published"], hits[1]["modified"]) == ("2024-03-05T23:30:00Z", "2024-04-01")


def test_search_refuses_bad_dates_and_sorts(dated_service):
    from harvester.mcp_server.core import ServiceError

    with pytest.raises(ServiceError, match="not a date"):
        dated_service["edge"].search("sourdough", since="last week")
    with pytest.raises(ServiceError, match="sort must be"):
        dated_service["edge"].search("sourdough", sort="oldest")
