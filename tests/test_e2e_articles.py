"""A small local blog and news site crawled by the ``site`` spider: each stored page's Markdown
holds its article (text, code listing as a fenced block, table; a post its engine writes into
``<noscript>``) and none of what blog and news themes put around it (comments, related and
most-read lists, share and newsletter boxes and the heading a form's box leaves, author boxes,
bylines, datelines, photo credits, teaser cards)."""
from __future__ import annotations

import pytest

from tests.crawl import NO_EMBEDDING, crawl
from tests.servers.sitesrv import Route, SiteServer

SITE_NAV = ('<header class="site-header"><a href="/">The Lab Notebook</a> <a href="/blog/">Blog</a> '
            '<a href="/news/">News</a> <a href="/about/">About</a></header>')
SITE_FOOT = '<footer class="site-footer"><p>Copyright The Lab Notebook. All rights reserved.</p></footer>'


def _page(title: str, main: str) -> Route:
    return Route(f'<!doctype html><html lang="en"><head><title>{title}</title></head><body>{SITE_NAV}'
                 f'{main}{SITE_FOOT}</body></html>')


def _comments(*texts: str) -> str:
    items = "".join(f'<li class="comment" itemprop="comment"><div class="comment-author">Reader {i}</div>'
                    f'<p>{t}</p></li>' for i, t in enumerate(texts))
    return (f'<div id="comments" class="comments-area"><h2 class="comments-title">{len(texts)} comments</h2>'
            f'<ol class="comment-list">{items}</ol><div id="respond"><h3>Leave a Reply</h3>'
            '<form><textarea></textarea></form></div></div>')


RELATED = ('<section class="related-posts"><h3>Related posts</h3><ul>'
           '<li><a href="/blog/lazy-pipelines/">Lazy pipelines in Python</a></li>'
           '<li><a href="/blog/tables-in-sqlite/">Summary tables in SQLite</a></li>'
           '<li><a href="/news/bridge-reopens/">The old bridge reopens a week early</a></li></ul></section>')
SHARE = ('<div class="share-box"><span>Share this:</span> <a href="/s/t">Twitter</a> '
         '<a href="/s/f">Facebook</a> <a href="/s/m">Mastodon</a></div>')

LAZY = _page("Lazy pipelines in Python", f"""<main id="main" class="site-main">
<article class="post type-post hentry">
 <header class="entry-header"><h1 class="entry-title">Lazy pipelines in Python</h1>
  <div class="entry-meta"><span class="byline">By Dana Scully</span>
   <time datetime="2024-03-01">March 1, 2024</time></div></header>
 <div class="entry-content">
  <p>Generators are lazy: each value is computed only when the loop asks for it, so a pipeline of
  them holds one item in memory at a time, however long the input file happens to be.</p>
  <p>Here is the whole pipeline, with its stages chained together:</p>
  <pre><code class="language-python">def read(path):
    with open(path) as f:
        yield from f

def numbers(lines):
    for line in lines:
        yield int(line)
</code></pre>
  <p>Each stage pulls from the one before it, and nothing runs until the last one is iterated.</p>
 </div>
 {SHARE}
 <div class="author-box"><p>Dana Scully writes about Python and data engineering on weekends.</p></div>
 <div class="box"><div class="box-head"><h2>Join the mailing list</h2></div>
  <form action="/subscribe"><input type="email" name="email"><button>Subscribe</button></form></div>
</article>
{RELATED}
{_comments("Great post, islice deserves a mention here as well, it saved my own pipeline last year.",
           "Thanks, I finally understand yield from after reading this, much clearer than the manual.")}
</main>""")

TABLES = _page("Summary tables in SQLite", f"""<main class="site-main">
<article class="post hentry">
 <h1 class="entry-title">Summary tables in SQLite</h1>
 <p class="byline">Posted by Walter Skinner</p>
 <div class="entry-content">
  <p>A summary table trades a little storage for queries that no longer scan the whole events table,
  which on our laptop made the weekly report go from minutes to a blink.</p>
  <table><thead><tr><th>query</th><th>rows scanned</th></tr></thead>
   <tbody><tr><td>raw events</td><td>1,200,000</td></tr><tr><td>summary table</td><td>52</td></tr></tbody></table>
  <p>Refresh the summary in the same transaction that inserts the events, and it never drifts.</p>
  <div class="bar"><span>Share:</span><button>Facebook</button><button>Mastodon</button><button>LinkedIn</button></div>
 </div>
 <div class="newsletter-signup"><p>Get one post a week in your inbox.</p><p>Subscribe to the newsletter.</p></div>
</article>
{RELATED}
{_comments("Triggers would keep it fresh too, though they slow the inserts down a fair bit in my tests.")}
</main>""")

CARDS = "".join(f'<div class="card"><a href="/news/story-{i}/">Other story number {i} of the day</a>'
                f'<span>{i} min read, from the city desk</span></div>' for i in range(6))
BRIDGE = _page("The old bridge reopens a week early", f"""<main>
<div class="story-header"><h1>The old bridge reopens a week early</h1>
 <p class="dateline"><time datetime="2024-05-02T08:00">May 2, 2024, 8:00 a.m.</time></p></div>
<figure><img src="/bridge.jpg" alt=""><figcaption>The new deck at dawn. Photo: Fox Mulder / Notebook</figcaption></figure>
<div class="story-body">
 <p>The old bridge over the river reopened on Monday morning, a week ahead of the schedule the
 council had announced, after engineers finished testing the new deck over the weekend.</p>
 <p>The new deck carries twice the weight of the old one, so buses can use the bridge again, and
 the detour through the market square ends today, the council said in a statement.</p>
</div>
<div class="most-read"><h2>Most read</h2><ol>
 <li><a href="/news/story-1/">Council approves the new budget</a></li>
 <li><a href="/news/story-2/">Local bakery wins a national award</a></li></ol></div>
<div class="grid">{CARDS}</div>
</main>""")

# A blog engine that writes its post into <noscript> for its script to render (Blogger).
SAFER = _page("Safer browsing", """<div class="blog-header"><p>The latest news and insights from the lab on
security and safety on the web, written by the people who build the browser's protections.</p></div>
<div class="post"><h2 class="post-title">Safer browsing</h2><div class="date">Tuesday, December 10, 2019</div>
<div class="byline">Posted by Ann Lee, Bo Chen and Dee Park of the browser safety team</div>
<div class="post-body" itemprop="articleBody"><script type="text/template"><p>Checking each page</p></script>
<noscript><p>Phishing sites rotate their domains every few hours, so a block list updated every half an
hour misses some of them, and checking each page as it loads catches the rest of them.</p>
<p>The check sends only a short hash prefix of the address to the server, never the address itself.</p>
</noscript></div></div>
<div class="sidebar"><h2>Archive</h2><ul><li><a href="/2019/">2019</a></li><li><a href="/2018/">2018</a></li></ul></div>""")

INDEX = _page("The Lab Notebook", """<main><h1>The Lab Notebook</h1><ul>
<li><a href="/blog/lazy-pipelines/">Lazy pipelines in Python</a></li>
<li><a href="/blog/tables-in-sqlite/">Summary tables in SQLite</a></li>
<li><a href="/news/bridge-reopens/">The old bridge reopens a week early</a></li>
<li><a href="/blog/safer-browsing/">Safer browsing</a></li></ul></main>""")

EXPECTED = {
    "/blog/lazy-pipelines/": (
        ["Generators are lazy",
         "```python\ndef read(path):\n    with open(path) as f:\n        yield from f\n",
         "nothing runs until the last one"],
        ["islice", "Leave a Reply", "Related posts", "Share this", "Mastodon", "weekends", "By Dana Scully",
         "March 1, 2024", "All rights reserved", "# Lazy pipelines in Python", "mailing list"]),
    "/blog/tables-in-sqlite/": (
        ["# Summary tables in SQLite", "| query | rows scanned |", "| summary table | 52 |",
         "it never drifts"],
        ["Triggers would keep", "Related posts", "Subscribe to the newsletter", "Posted by Walter Skinner",
         "All rights reserved", "Share:"]),
    "/news/bridge-reopens/": (
        ["# The old bridge reopens a week early", "reopened on Monday morning", "twice the weight"],
        ["Most read", "bakery", "Photo: Fox Mulder", "May 2, 2024", "Other story number", "min read",
         "All rights reserved"]),
    "/blog/safer-browsing/": (
        ["Phishing sites rotate their domains", "never the address itself"], ["All rights reserved"]),
}


@pytest.fixture(scope="module")
def items(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    routes = {"/": INDEX, "/blog/lazy-pipelines/": LAZY, "/blog/tables-in-sqlite/": TABLES,
              "/news/bridge-reopens/": BRIDGE, "/blog/safer-browsing/": SAFER,
              "/robots.txt": Route("User-agent: *\nDisallow:\n")}
    with SiteServer(routes=routes) as server:
        result = crawl("site", server.url, tmp_path_factory.mktemp("articles"),
                       settings={**NO_EMBEDDING, "DEPTH_LIMIT": 1})
    assert result.returncode == 0, result.output[-2000:]
    root = server.url.rstrip("/")
    return {item["url"].removeprefix(root): item for item in result.items}


@pytest.fixture(scope="module")
def pages(items: dict[str, dict]) -> dict[str, str]:
    return {path: item["markdown"] for path, item in items.items()}


@pytest.mark.parametrize("path", sorted(EXPECTED))
def test_each_article_keeps_its_text_and_leaves_out_what_surrounds_it(pages: dict[str, str], path: str) -> None:
    assert path in pages, sorted(pages)
    must, must_not = EXPECTED[path]
    markdown = pages[path]
    for text in must:
        assert text in markdown, (text, markdown)
    for text in must_not:
        assert text not in markdown, (text, markdown)


def test_an_article_title_is_in_the_item_and_every_chunk_context_not_in_its_text(items: dict[str, dict]) -> None:
    # The post declares itself an article (its date): its title heading is metadata, as search embeds it.
    item = items["/blog/lazy-pipelines/"]
    assert item["title"] == "Lazy pipelines in Python"
    assert item["chunks"]
    for chunk in item["chunks"]:
        assert chunk["context"].startswith("Lazy pipelines in Python"), chunk
        assert "# Lazy pipelines" not in chunk["text"]
    # A page that does not declare itself an article keeps its title heading.
    assert items["/blog/tables-in-sqlite/"]["markdown"].startswith("# Summary tables in SQLite")
