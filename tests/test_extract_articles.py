"""Articles on the generic path (no network, no Scrapy): a blog post and a news story written the
way blog and news themes write them, each checked for what its Markdown must hold (the article,
its code listing as a fenced block, its table) and must not (comments, related and most-read
lists, share, newsletter and author boxes, bylines, datelines, photo credits)."""
from __future__ import annotations

import pytest

from harvester.chunking.context import context_line, heading_paths
from harvester.extract.article import (
    declares_article,
    drop_title_heading,
    drop_trailing_headings,
    narrow_article,
    prune_article,
    trim_link_tail,
)
from harvester.extract.page import ExtractedPage, extract_page, parse_html

PARA = ("Generators are lazy: each value is computed only when the loop asks for it, so a pipeline "
        "of them holds one item in memory at a time however long the input is.")

BLOG = f"""<!doctype html><html lang="en"><head><title>Lazy pipelines in Python - Dana's blog</title></head>
<body><header class="site-header"><a href="/">Dana's blog</a></header>
<main id="main" class="site-main">
<article class="post-42 post type-post status-publish hentry category-python tag-generators">
 <header class="entry-header"><h1 class="entry-title">Lazy pipelines in Python</h1>
  <div class="entry-meta"><span class="byline">By Dana Scully</span>
   <time datetime="2024-03-01">March 1, 2024</time></div></header>
 <div class="entry-content">
  <p>{PARA}</p>
  <p>Here is the whole pipeline, three stages chained together:</p>
  <pre><code class="language-python">def read(path):
    with open(path) as f:
        yield from f

def numbers(lines):
    for line in lines:
        yield int(line)
</code></pre>
  <p>{PARA} The stages below were measured on a million lines.</p>
  <table><thead><tr><th>stage</th><th>memory</th></tr></thead>
   <tbody><tr><td>read</td><td>1 line</td></tr><tr><td>numbers</td><td>1 int</td></tr></tbody></table>
  <p>That is the whole trick of streaming a file through generators.</p>
 </div>
 <div class="sharedaddy sd-sharing-enabled"><h3>Share this:</h3>
  <ul><li><a href="/s/tw">Twitter</a></li><li><a href="/s/fb">Facebook</a></li></ul></div>
 <div class="author-box"><p>Dana Scully writes about Python and data engineering for fun.</p></div>
 <footer class="entry-footer">Posted in Python. Bookmark the permalink.</footer>
</article>
<section class="related-posts"><h3>You may also like</h3><ul>
 <li><a href="/p/1">Ten asyncio tricks nobody told you about</a></li>
 <li><a href="/p/2">Why I stopped using pandas for small files</a></li></ul></section>
<div id="comments" class="comments-area"><h2 class="comments-title">3 thoughts on this post</h2>
 <ol class="comment-list"><li class="comment"><p>Great post, but itertools.islice deserves a mention
 here as well, it saved my own pipeline last year when the input grew past memory.</p></li>
 <li class="comment"><p>Thanks Dana, I finally understand yield from after reading this explanation,
 it is so much clearer than the official documentation on the subject.</p></li></ol>
 <div id="respond" class="comment-respond"><h3>Leave a Reply</h3></div></div>
</main></body></html>"""

NEWS = f"""<!doctype html><html lang="en"><head><title>River floods the old town - Daily Courier</title></head>
<body><nav class="top"><a href="/">Home</a><a href="/world">World</a></nav>
<main>
<div class="article-header"><h1>River floods the old town after three days of rain</h1>
 <p class="byline">By Fox Mulder, Staff Reporter</p>
 <p class="dateline"><time datetime="2024-05-02T08:00">May 2, 2024, 8:00 a.m.</time></p></div>
<figure><img src="/flood.jpg" alt=""><figcaption>Water in the market square. Photo: Walter Skinner / Courier</figcaption></figure>
<div class="article-body">
 <p>The river rose above its banks on Tuesday night and flooded the streets of the old town, where
 shop owners spent the morning carrying their stock to upper floors. {PARA}</p>
 <div class="newsletter-signup"><p>Get the morning briefing in your inbox every day.</p>
  <p>Sign up for our free newsletter today.</p></div>
 <p>The mayor said the pumps would run through the night and asked residents to stay away from the
 embankment until the water level falls below the warning mark.</p>
</div>
<div class="most-read"><h2>Most read</h2><ol>
 <li><a href="/a/1">Council approves the new bridge budget</a></li>
 <li><a href="/a/2">Local bakery wins national award</a></li>
 <li><a href="/a/3">Train services cut for the summer</a></li></ol></div>
</main></body></html>"""


@pytest.fixture(scope="module")
def blog_page() -> ExtractedPage:
    return extract_page(BLOG, "http://127.0.0.1:18300/2024/03/lazy-pipelines/")


@pytest.fixture(scope="module")
def blog(blog_page: ExtractedPage) -> str:
    return blog_page.markdown


@pytest.fixture(scope="module")
def news() -> str:
    return extract_page(NEWS, "http://127.0.0.1:18300/news/flood").markdown


def test_a_blog_post_keeps_its_text_code_listing_and_table(blog: str) -> None:
    assert "Generators are lazy" in blog
    assert "```python\ndef read(path):\n    with open(path) as f:\n        yield from f\n" in blog
    assert "| stage | memory |" in blog
    assert "| numbers | 1 int |" in blog
    assert "That is the whole trick" in blog


def test_an_article_title_is_metadata_and_context_not_a_heading(blog_page: ExtractedPage) -> None:
    assert blog_page.title == "Lazy pipelines in Python"
    assert "Lazy pipelines" not in blog_page.markdown
    # What search embeds: every chunk's context line starts with the title.
    contexts = [context_line(blog_page.title, path) for path in heading_paths(blog_page.headings) or [()]]
    assert all(c.startswith("Lazy pipelines in Python") for c in contexts), contexts


@pytest.mark.parametrize("chrome", [
    "itertools.islice",            # a comment
    "thoughts on this post",       # the comment section's heading
    "Leave a Reply",               # the reply form
    "Ten asyncio tricks",          # related posts
    "Share this",                  # share box
    "Twitter",
    "writes about Python and data",  # author box
    "By Dana Scully",              # byline
    "March 1, 2024",               # dateline
])
def test_a_blog_post_leaves_out_comments_related_posts_and_boxes(blog: str, chrome: str) -> None:
    assert chrome not in blog


def test_a_news_story_keeps_its_text(news: str) -> None:
    assert "River floods the old town" in news
    assert "The river rose above its banks" in news
    assert "The mayor said the pumps" in news


@pytest.mark.parametrize("chrome", [
    "Most read", "Council approves",                 # most-read list
    "morning briefing", "free newsletter",           # newsletter box
    "Photo: Walter Skinner",                         # photo credit
    "By Fox Mulder",                                 # byline
    "May 2, 2024",                                   # dateline
])
def test_a_news_story_leaves_out_lists_boxes_bylines_and_credits(news: str, chrome: str) -> None:
    assert chrome not in news


def test_a_thread_longer_than_its_post_goes_whatever_its_size() -> None:
    comments = "".join(f'<li class="comment"><p>Comment number {i} says the post is right about it.</p></li>'
                       for i in range(40))
    root = parse_html(f'<html><body><article><h1>Short</h1><p>{PARA}</p>'
                      f'<div id="disqus_thread"><ol>{comments}</ol></div></article></body></html>')
    article = root.find(".//article")
    prune_article(article)
    text = article.text_content()
    assert "Generators are lazy" in text
    assert "Comment number" not in text


def test_a_wrapper_with_a_widget_name_that_holds_the_article_stays() -> None:
    root = parse_html(f'<html><body><main><div class="post-with-sidebar share-enabled"><h2>Title</h2>'
                      f'<p>{PARA}</p><p>{PARA}</p></div><div class="share"><a href="/t">Tweet</a></div>'
                      '</main></body></html>')
    main = root.find(".//main")
    prune_article(main)
    text = main.text_content()
    assert "Generators are lazy" in text
    assert "Tweet" not in text


CARDS = "".join(f'<div class="card"><a href="/story/{i}">Other story number {i} of the day</a>'
                f'<span>{i} min</span></div>' for i in range(6))
WHOLE_PAGE_MAIN = f"""<html><body><main class="page">
<div class="top"><a href="/">Courier</a> <a href="/world">World</a> <a href="/sport">Sport</a></div>
<div class="story"><h1>Bridge reopens</h1><p>{PARA}</p><p>{PARA} The bridge reopened on Monday, a week early.</p>
 <p>Engineers said the new deck will carry twice the weight of the old one, and the city says so too.</p></div>
<div class="grid">{CARDS}</div>
<div class="box"><p>Questions about the story? Write to the desk.</p></div>
</main></body></html>"""


def test_a_main_element_holding_the_whole_page_is_cut_to_its_best_block() -> None:
    md = extract_page(WHOLE_PAGE_MAIN, "http://127.0.0.1:18300/news/bridge").markdown
    assert "# Bridge reopens" in md
    assert "The bridge reopened on Monday" in md
    assert "twice the weight" in md
    assert "Other story number" not in md   # teaser cards, a third of them link text
    assert "Write to the desk" not in md    # a short box beside the story


def test_narrowing_keeps_prose_siblings_of_the_best_block() -> None:
    root = parse_html(f'<html><body><main><div class="lead">{PARA} {PARA}</div>'
                      f'<div class="text"><p>{PARA}</p><p>{PARA}</p><p>{PARA}</p></div>'
                      '<div class="x"><a href="/a">One</a> <a href="/b">Two</a> and more</div></main></body></html>')
    main = root.find(".//main")
    narrow_article(main)
    text = main.text_content()
    assert text.count("Generators are lazy") == 5
    assert "One" not in text


def test_narrowing_keeps_the_headings_and_lead_ins_around_the_best_block() -> None:
    root = parse_html(f'<html><body><main><h2>Configuring</h2><p>Load a board first:</p>'
                      f'<div class="highlight"><pre>board = load("a.toml")  # the board, its widgets and options</pre></div>'
                      f'<h2>Options</h2><div class="body"><p>{PARA}</p><p>{PARA}</p></div>'
                      '<div class="x"><a href="/a">One</a> <a href="/b">Two</a> and more</div></main></body></html>')
    main = root.find(".//main")
    narrow_article(main)
    text = main.text_content()
    for kept in ("Configuring", "Load a board first:", 'load("a.toml")', "Options", "Generators are lazy"):
        assert kept in text
    assert "One" not in text


# A news theme's story with a headline list inside its main element, in classes that name no widget
# (the markup of a Hearst newspaper's "LATEST NEWS" module), and a paragraph that links a lot.
HEADLINES = "".join(f'<li><h5><a href="/news/{i}">Council votes on the budget for district number {i}</a></h5></li>'
                    for i in range(5))
LISTED = f"""<!doctype html><html><head><title>Tram line opens</title>{{head}}</head><body>
<main><div class="page-content"><h1>Tram line opens</h1>
<p>{PARA}</p><p>The new line runs from the <a href="/station">station</a> to the
<a href="/harbour">harbour</a> and the <a href="/stadium">stadium</a>.</p>
<p><strong>READ MORE:</strong> <a href="/news/depot">Tram depot plans go to the council in March</a></p><p>{PARA}</p>
<section class="coreHeadlineList"><div class="header"><h2>LATEST NEWS</h2></div><ul>{HEADLINES}</ul></section>
</div></main></body></html>"""


def test_an_article_page_leaves_out_the_link_lists_inside_its_main_element() -> None:
    md = extract_page(LISTED.format(head='<meta property="og:type" content="article">'),
                      "http://127.0.0.1:18300/news/tram").markdown
    assert "Generators are lazy" in md
    assert "runs from the [station](http://127.0.0.1:18300/station)" in md  # prose with links stays
    assert "Council votes" not in md and "LATEST NEWS" not in md
    assert "Tram depot plans" not in md  # a paragraph that is one headline link


def test_a_page_that_is_no_article_keeps_its_link_lists() -> None:
    # A documentation page no profile knows: its "See also" list is content.
    md = extract_page(LISTED.format(head=""), "http://127.0.0.1:18300/guide/tram").markdown
    assert "Council votes on the budget for district number 4" in md



# A story whose labels sit beside its paragraphs in plain blocks, the way a newspaper theme writes
# them (a kicker, a dateline and "Updated" above, an advert label and a comment prompt below).
EDGES = f"""<!doctype html><html><head><title>Harbour crane</title>
<meta property="og:type" content="article"></head><body><main>
<div class="kicker">HARBOUR NEWS</div><h1>A new crane for the harbour</h1>
<div class="when"><span>18 Nov 2019, 19:09</span></div><div>Updated</div>
<p>{PARA} The crane arrived by sea on Monday.</p><p>It lifts twice the weight of the old one.</p>
<p>{PARA} It will be in service from spring, the harbour master said.</p>
<div class="x1">Advert</div><p>Thanks for reading!</p><h3>Tell us what YOU think</h3><div class="x2">comments</div>
</main></body></html>"""


def test_an_article_page_leaves_out_the_labels_around_its_story() -> None:
    md = extract_page(EDGES, "http://127.0.0.1:18300/news/crane").markdown
    for kept in ("# A new crane for the harbour", "arrived by sea", "twice the weight", "in service from spring",
                 "Thanks for reading!"):
        assert kept in md
    # The comment prompt's heading, over nothing once the comments went, goes too.
    for label in ("HARBOUR NEWS", "19:09", "Updated", "Advert", "comments", "Tell us what YOU think"):
        assert label not in md


# A how-to post told in lists and code more than in paragraphs, under a byline in plain blocks
# (Hugo's Ananke theme), with a step whose sub-list is links.
STEPS = f"""<!doctype html><html><head><title>Release day</title>
<meta property="og:type" content="article"></head><body><main><article><header>
<h1>Release day</h1><p class="tracked">By <strong>Jane Doe</strong></p>
<time datetime="2024-03-12">March 12, 2024</time><span> - 6 minutes read </span></header>
<div class="nested-copy"><p>{PARA}</p><ol>
<li><p><strong>Lock down the CI:</strong></p><ul><li>Lock down the CI to prevent public access to the
 CI machines, and ping a member of the admins team so that they know.</li></ul></li>
<li><p><strong>Notify the community:</strong></p><ul><li>Notify the community that the release is out:
 <ul><li>Slack: <code>#social</code></li><li><a href="https://github.com/acme/docker/issues">docker</a></li>
 <li><a href="https://github.com/acme/build/issues">build-wg</a></li>
 <li>Email: notify <a href="https://groups.example.org/sec">the security group</a></li></ul></li></ul></li>
</ol><pre><code>git tag -s v1.2.3 -m "Release 1.2.3"
git push origin v1.2.3
make release VERSION=1.2.3 SIGN=yes UPLOAD=yes</code></pre>
<ul><li>Verify the CI is green on every release proposal before the tag is pushed.</li>
<li>Follow the release process to the letter, and write down what went wrong.</li></ul>
</div></article></main></body></html>"""


def test_a_how_to_post_loses_its_byline_and_keeps_its_steps_links() -> None:
    md = extract_page(STEPS, "http://127.0.0.1:18300/posts/release-day/").markdown
    assert md.startswith("Generators are lazy")  # no title, byline, date or reading time
    for label in ("Jane Doe", "March 12", "minutes read"):
        assert label not in md
    # A step's sub-list of links is part of the step, not a block of related links.
    assert "[docker](https://github.com/acme/docker/issues)" in md and "Slack: `#social`" in md
    assert "notify [the security group]" in md and "git push origin v1.2.3" in md


def test_an_article_title_in_a_lower_heading_goes_before_the_story_only() -> None:
    """Hugo Stack writes the title as an h2 linking to the post; the same words later head a section."""
    html = (f'<!doctype html><html><head><title>Release day | Blog</title><meta property="og:type" '
            f'content="article"></head><body><main><article><header><h2 class="article-title">'
            f'<a href="/posts/release-day/">Release day</a></h2></header><p>{PARA}</p><h2>Release day</h2>'
            f"<p>{PARA} And then it ships.</p></article></main></body></html>")
    md = extract_page(html, "http://127.0.0.1:18300/posts/release-day/").markdown
    assert md.startswith("Generators are lazy") and "\n## Release day\n" in md


def test_an_article_keeps_its_code_whatever_the_highlighter_calls_its_tokens() -> None:
    """Prism's "token comment", highlight.js's "hljs-comment" and "hljs-meta" name code tokens the
    way comment threads and metadata boxes are named: inside a code block they are code."""
    code = ("<pre class='language-js'><code class='language-js'><span class='token comment'>// In another module</span>\n"
            "<span class='token keyword'>const</span> a = <span class='hljs-meta'>1</span>;\n"
            "<span class='hljs-comment'>// hljs comment</span>\n<span class='hidden'>b</span>;\n</code></pre>")
    html = (f'<!doctype html><html><head><title>Post</title><meta property="og:type" content="article"></head>'
            f"<body><main><h1>Post</h1><p>{PARA}</p>{code}<p>{PARA}</p></main></body></html>")
    md = extract_page(html, "http://127.0.0.1:18300/posts/code/").markdown
    assert "```js\n// In another module\nconst a = 1;\n// hljs comment\nb;\n```" in md


# A news story's photos the way news themes write them: a lead photo whose alt text repeats its caption
# and credit, a photo inside the text, and a figure that holds a code listing (a developer blog's).
PHOTOS = f"""<!doctype html><html><head><title>Harbour crane</title>
<meta property="og:type" content="article"></head><body><main><h1>A new crane for the harbour</h1>
<figure class="lead"><picture><source srcset="/crane.webp"><img src="/crane.jpg"
 alt="The crane on its barge at dawn. Photo: Ada Lee / Courier"></picture></figure>
<p>{PARA} The crane arrived by sea on Monday.</p>
<p><img src="/master.jpg" alt="Harbour master Jo Park, Getty Images"></p>
<p>{PARA} It will be in service from spring, the harbour master said.</p>
<figure><pre><code>crane.lift(tons=40)</code></pre><img src="/plot.png" alt="Load chart"></figure>
</main></body></html>"""
# The same page with no main element: trafilatura's Markdown is the fallback.
PHOTOS_BARE = PHOTOS.replace("<main>", "<div>").replace("</main>", "</div>")


@pytest.mark.parametrize("html", [PHOTOS, PHOTOS_BARE], ids=["main", "fallback"])
def test_an_article_page_leaves_out_its_photos_alt_text_and_credits(html: str) -> None:
    md = extract_page(html, "http://127.0.0.1:18300/news/crane").markdown
    assert "arrived by sea" in md and "in service from spring" in md
    for credit in ("Photo: Ada Lee", "Getty Images", "crane.jpg", "master.jpg"):
        assert credit not in md


def test_an_article_figure_keeps_its_code_listing() -> None:
    md = extract_page(PHOTOS, "http://127.0.0.1:18300/news/crane").markdown
    assert "crane.lift(tons=40)" in md
    assert "Load chart" not in md


def test_a_page_that_is_no_article_keeps_its_images() -> None:
    html = PHOTOS.replace('<meta property="og:type" content="article">', "")
    md = extract_page(html, "http://127.0.0.1:18300/guide/crane").markdown
    assert "![Harbour master Jo Park, Getty Images](http://127.0.0.1:18300/master.jpg)" in md


# A press release's photo with its caption in plain blocks (no figure), a paragraph with an inline
# photo, and a newsletter box in an aside long enough to read as prose.
BOXES = f"""<!doctype html><html><head><title>Rail link</title>
<meta property="og:type" content="article"></head><body><main><h1>The rail link opens</h1>
<p>{PARA} The first train left at six.</p>
<div class="m-3"><div class="m-3-i"><img src="/train.jpg" alt=""></div>
 <p class="m-3-t">The first train at the platform in the morning light, with the mayor and its driver.
 Picture: Rail press office</p></div>
<p><img src="/map.png" alt="">The line runs along the coast for forty kilometres, with six stations.</p>
<p>{PARA} Tickets go on sale next week, the operator said.</p>
<aside class="box-wide"><h3>Stay informed</h3><p>Every weekday morning our editors pick the stories
 that matter for your commute, your city and your weekend, with the weather and the traffic, in one
 short email that you can read in five minutes. Sign up now, it is free and you can leave at any time.</p></aside>
</main></body></html>"""


def test_an_article_page_leaves_out_photo_captions_and_asides_that_read_as_prose() -> None:
    md = extract_page(BOXES, "http://127.0.0.1:18300/news/rail").markdown
    for kept in ("The first train left at six.", "runs along the coast for forty kilometres", "Tickets go on sale"):
        assert kept in md
    for box in ("Rail press office", "first train at the platform", "Stay informed", "editors pick the stories"):
        assert box not in md


# Teasers of other stories inside the main element, each a linked headline over an excerpt that is
# not link text (a news theme's "More stories" module), after a story with a subheading that links
# to its own anchor.
TEASER = "".join(f'<div class="c"><h3><a href="/news/{i}">Council votes on the budget of district {i}</a></h3>'
                 f'<p>The council met on Tuesday to vote on the budget of district {i}, which grows by a tenth '
                 'next year, and heard the residents on the new parking rules.</p></div>' for i in range(3))
# ...and cards whose link wraps their headline.
CARDS_LINKED = "".join(f'<div class="k"><a href="/news/fees-{i}"><h3>Harbour fees rise in zone {i}</h3></a>'
                       f'<p>The port authority raises the fees of zone {i} next year, the first rise in ten '
                       'years, to pay for the new quay and its cranes.</p></div>' for i in range(2))
TEASERS = f"""<!doctype html><html><head><title>Tram line opens</title>
<meta property="og:type" content="article"></head><body><main><h1>Tram line opens</h1>
<p>{PARA} {PARA} The first tram left at six.</p><h2 id="route"><a href="#route">The route</a></h2>
<p>{PARA} {PARA} The line runs from the station to the harbour.</p><p>{PARA} It runs every ten minutes.</p>
<section class="s-2"><h2>More stories</h2>{TEASER}</section><section class="s-3">{CARDS_LINKED}</section>
</main></body></html>"""


def test_an_article_page_leaves_out_teasers_of_other_stories() -> None:
    md = extract_page(TEASERS, "http://127.0.0.1:18300/news/tram").markdown
    assert "The first tram left at six." in md and "runs from the station to the harbour" in md
    assert "The route" in md
    for teaser in ("More stories", "Council votes", "The council met", "Harbour fees", "port authority"):
        assert teaser not in md


@pytest.mark.parametrize(("html", "expected"), [
    ('<head><meta property="og:type" content="article"></head>', True),
    ('<head><meta property="og:type" content="website"></head>', False),
    ("<head></head>", False),
    ('<head><script type="application/ld+json">{"@type": "NewsArticle", "headline": "Tram"}</script></head>', True),
    ('<head><script type="application/ld+json">{"@type": ["BlogPosting"]}</script></head>', True),
    ('<body><div itemscope itemtype="https://schema.org/NewsArticle"><p>x</p></div></body>', True),
    # Documentation themes mark every page an Article (Read the Docs', MkDocs'), or a TechArticle.
    ('<body><div itemscope itemtype="http://schema.org/Article"><p>x</p></div></body>', False),
    ('<head><script type="application/ld+json">{"@type": "TechArticle"}</script></head>', False),
    # A stray element in <head> ends it: the meta tags after it land in the body.
    ('<head><title>Tram</title><div>x</div><meta property="og:type" content="article"></head>', True),
])
def test_a_page_declares_itself_an_article_by_its_type_or_its_date(html: str, expected: bool) -> None:
    root = parse_html(f"<html>{html}<body><p>{PARA}</p></body></html>")
    assert declares_article(root, None) is expected
    assert declares_article(root, "2024-05-02") is True  # a publication date


# trafilatura's Markdown of an article page with no main element keeps a title heading written as an
# h2 under the site's h1: the fallback removes it as the main element's path removes the h1.
@pytest.mark.parametrize(("md", "expected"), [
    ("## Tram line opens\n\nThe first tram left at six.", "The first tram left at six."),
    ("By Ann\n\n# Tram line opens\n\nThe first tram left at six.", "By Ann\n\nThe first tram left at six."),
    # A heading that says more than the title, or only the site's name, stays.
    ("# Tram line opens on the coast\n\nText.", "# Tram line opens on the coast\n\nText."),
    ("# Courier\n\nText.", "# Courier\n\nText."),
])
def test_the_fallback_leaves_out_the_heading_that_repeats_the_title(md: str, expected: str) -> None:
    assert drop_title_heading(md, "Tram line opens - Courier").strip() == expected


def test_the_fallback_leaves_out_the_lines_of_links_after_the_story() -> None:
    md = ("The first tram left at six, and [the mayor](http://a/m) was on it.\n\n| stop | time |\n|---|---|\n"
          "| Quay | 6:10 |\n\nThe line runs every ten minutes.\n\n## Related\n\n"
          "- [Ferry timetable changes](http://a/1)\n- [Council approves the quay](http://a/2)\n\n"
          "[Trams](http://a/t), [Harbour](http://a/h)\n")
    trimmed = trim_link_tail(md)
    assert trimmed.rstrip().endswith("## Related")
    assert "the mayor" in trimmed and "| Quay | 6:10 |" in trimmed
    assert trim_link_tail(trimmed) == trimmed


# A news theme's story with what it hides (a gallery overlay's counter), an advert's label and a share
# link between its paragraphs, a "Related coverage" heading over a link list, an "Updated" line that
# ends like a sentence, the date in microdata, scripts that outweigh the text, and after the story a
# list whose items are half links, a dateline and a line of links.
SCRIPT = "<script>" + "var slot = 1;" * 300 + "</script>"
LABELS = f"""<!doctype html><html><head><title>Harbour crane</title>
<meta property="og:type" content="article"></head><body><main><h1>A new crane for the harbour</h1>
<p>UPDATED: Tue., Nov. 19, 2019.</p><span itemprop="datePublished">terça-feira, 19 de novembro de 2019</span>
<div class="gallery hidden"><span>1</span> of <span>8</span> Back to Gallery</div>
<p style="display: none">Photo 1 / 8</p>{SCRIPT}<p class="d-none d-md-block">The crane is the largest in the region.</p>
<p>The crane arrived by sea on Monday, and it lifts twice the weight of the old one.</p>
<div class="slot-3"><span>ADVERTISEMENT</span></div><p><a href="whatsapp://send?text=Crane">Share on WhatsApp</a></p>
<p>It will be in service from spring, the harbour master said at the quay on Monday.</p>
<p><strong>DON'T MISS</strong></p><p><a href="/a/5">Cranes of the north</a> | <a href="/a/6">Quay works start</a></p>
<ul><li>Why the cranes of every port got so much bigger: <a href="/a/7">a short history of the harbour's cranes</a></li>
<li>What the pilots think of the new quay: <a href="/a/8">their letters to the harbour master</a></li></ul>
<h3>Related coverage</h3><ul><li><a href="/a/1">Council approves the new quay</a></li>
<li><a href="/a/2">Ferry timetable changes</a></li></ul>
<div class="when">Published 10:02 AM EST Nov 19, 2019</div>
<p>More: <a href="/a/3">The harbour master on the new quay and its cranes</a> and
<a href="/a/4">What the ferry timetable changes mean for you</a>.</p>
</main></body></html>"""


def test_an_article_page_leaves_out_hidden_blocks_advert_labels_and_datelines() -> None:
    md = extract_page(LABELS, "http://127.0.0.1:18300/news/crane").markdown
    assert "arrived by sea" in md and "in service from spring" in md
    assert "largest in the region" in md  # hidden on phones only
    for chrome in ("Back to Gallery", "1 / 8", "ADVERTISEMENT", "Related coverage", "Council approves",
                   "UPDATED", "novembro", "10:02", "WhatsApp", "More:", "ferry timetable", "Cranes of the north", "DON'T MISS", "pilots think"):
        assert chrome not in md, chrome


# The headings a generic page ends with, over nothing: what the cleaning left of a newsletter box, a
# related-stories list or a comment form after the story.
STORY = "The first tram left at six, and the mayor was on it."


@pytest.mark.parametrize(("md", "expected"), [
    (f"{STORY}\n\n## Get our newsletter\n\n### More from the city\n", STORY),
    (f"{STORY}\n\n---\n\n#### Share this story\n\n\\\n", STORY),
    # Within the text, a heading over a photo the cleaning took still names its part of the post.
    (f"## Check the stream\n\n## Moderate the chat\n\n{STORY}\n", None),
    # Code is text, and a line of it that starts with # is no heading.
    ("## Run it\n\n```sh\n# start the tram\n```\n", None),
    # A heading that reads as prose is text: a standfirst, a pull quote.
    (f"{STORY}\n\n#### The mayor said the line would run all night. Nobody believed him.\n", None),
    # A heading that is a link is an entry of a list: an index page's, a "See also".
    (f"{STORY}\n\n## See also\n\n### [Ferry timetable](http://a/f)\n", None),
])
def test_the_headings_a_page_ends_with_over_nothing_are_left_out(md: str, expected: str | None) -> None:
    assert drop_trailing_headings(md).strip() == (expected if expected is not None else md.strip())


NEWSLETTER = f"""<!doctype html><html><head><title>Tram line opens</title>
<meta property="og:type" content="article"></head><body><main><article><h1>Tram line opens</h1>
<p>{PARA}</p><h2>The route</h2><p>{PARA} It runs from the station to the harbour.</p>
<div class="box"><div class="box-head"><h2>Get our newsletter</h2></div>
<form action="/subscribe"><input type="email" name="email"><button>Subscribe</button></form></div>
</article></main></body></html>"""


def test_an_article_page_leaves_out_the_heading_of_a_box_the_cleaning_took() -> None:
    page = extract_page(NEWSLETTER, "http://127.0.0.1:18300/news/tram")
    assert page.markdown.rstrip().endswith("It runs from the station to the harbour.")
    assert "newsletter" not in page.markdown
    assert [heading["text"] for heading in page.headings] == ["The route"]


# A blog engine that writes the post into <noscript> (its script renders it): the schema.org body is
# empty once the cleaning drops <noscript>, and trafilatura, given the page as it came, finds the post.
NOSCRIPT = f"""<!doctype html><html><head><title>Safer browsing - Security blog</title></head><body>
<header><h1><a href="/">Security blog</a></h1></header><div class="post"><h2>Safer browsing</h2>
<div class="post-content" itemprop="articleBody"><script type="text/template"><p>{PARA}</p></script>
<noscript><p>{PARA}</p><p>Phishing sites rotate their domains quickly, so a list updated every half hour
misses some of them; checking each page as it loads catches them.</p>
<p>The check sends a hash prefix of the address, never the address itself.</p></noscript></div></div>
<footer><p>Privacy - Terms</p></footer></body></html>"""


def test_a_candidate_too_short_after_its_cleaning_leaves_trafilatura_the_page_as_it_came() -> None:
    page = extract_page(NOSCRIPT, "http://127.0.0.1:18300/2024/05/safer.html")
    assert not page.degraded
    assert "Phishing sites rotate their domains" in page.markdown
    assert "never the address itself" in page.markdown


# A page marks one article body. Several are one story's sections (siblings), or else the excerpts of
# the cards that link other stories, none of them this page's.
SECTIONS = f"""<!doctype html><html><head><title>Fire season</title>
<meta property="og:type" content="article"></head><body><main><article><h1>Fire season</h1>
<div class="container"><section itemprop="articleBody"><p>{PARA} The first part.</p></section>
<div class="ad-slot"></div><section itemprop="articleBody"><p>{PARA} The second part.</p></section>
<section itemprop="articleBody"><p>{PARA} The third part.</p></section></div>
</article></main></body></html>"""
CARDS = f"""<!doctype html><html><head><title>Why Rust</title>
<meta property="og:type" content="article"></head><body><main><article class="post"><h1>Why Rust</h1>
<p>{PARA} Rust has been the most loved language for years.</p><p>{PARA} Going beyond the technical points.</p>
</article><aside><h2>Related</h2>""" + "".join(
    f'<article class="card"><h3><a href="/p/{n}">Post {n}</a></h3><div itemprop="articleBody">'
    f"What inspires someone to become a developer, part {n}?</div></article>" for n in range(3)) + """
</aside></main></body></html>"""


COPIES = f"""<!doctype html><html><head><title>Tech news</title>
<meta property="og:type" content="article"></head><body><main><div class="content">
<p>{PARA} Good morning, here is the news.</p><div class="box"><p>Brought to you by a phone maker whose
new phone lasts for days on one charge, and whose camera sees in the dark.</p></div></div></main>
""" + "".join(f"""<div style="display:none" itemscope itemtype="http://schema.org/NewsArticle">
<div itemprop="headline">Tech news</div><div itemprop="articleBody">{PARA} Good morning, here is the news.
</div></div>""" for _ in range(2)) + "</body></html>"


def test_several_article_bodies_are_one_storys_sections_or_none_of_them_the_pages() -> None:
    sections = extract_page(SECTIONS, "http://127.0.0.1:18300/news/fire").markdown
    assert all(part in sections for part in ("The first part.", "The second part.", "The third part."))
    cards = extract_page(CARDS, "http://127.0.0.1:18300/blog/why-rust").markdown
    assert "Rust has been the most loved" in cards and "Going beyond" in cards
    assert "What inspires" not in cards
    # Two copies of one body (hidden microdata blocks) are that body, and the page's article.
    copies = extract_page(COPIES, "http://127.0.0.1:18300/news/tech").markdown
    assert "Good morning, here is the news." in copies and "phone maker" not in copies


# What the cleaning leaves of a widget: its label, once its buttons, form or links (two thirds of
# its text or more) went.
WIDGETS = f"""<!doctype html><html><head><title>Reset your password</title></head><body><main>
<h1>Reset your password</h1><p>{PARA}</p>
<div class="box"><p>Share:</p><button>Facebook</button><button>Mastodon</button><button>LinkedIn</button>
<button>Email</button></div>
<div class="tabs"><button>Python package</button><button>Shell</button><pre><code>pip install frob</code></pre></div>
<div class="note"><p>Read this first.</p></div><p>{PARA} The link works for one hour.</p>
<div class="box"><form action="/ask"><label>Still stuck? Ask the support team about your account</label>
<textarea name="q"></textarea><button>Send your question</button></form><p>Still stuck?</p></div>
</main></body></html>"""


def test_the_label_a_widget_leaves_when_its_controls_go_goes_too() -> None:
    md = extract_page(WIDGETS, "http://127.0.0.1:18300/help/reset").markdown
    assert "Share:" not in md and "Still stuck?" not in md
    # A box that lost its tab buttons keeps its code, and one that lost nothing keeps its text.
    assert "pip install frob" in md and "Read this first." in md and "one hour" in md
