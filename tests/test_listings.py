"""Listings are navigation, told by their structure: a blog's tag, date and author archives, search
results, a help centre's category and section pages. Docs indexes with an introduction, help-centre
articles and short posts followed by related posts stay content."""

from __future__ import annotations

import re

import pytest

from harvester.extract.classify import NOT_INDEXED, PageType, classify_page

SITE = "https://blog.example.com"
WORDS = ("Caching the parsed configuration saves a second at start-up, and the same trick works for "
         "templates, schemas and any file read on every request. ")


def excerpt(n: int, chars: int = 180) -> str:
    return (f"Post {n}: " + WORDS * 12)[:chars]


def page(body: str, *, title: str = "Example blog", head: str = "", header: bool = True) -> str:
    chrome = ('<header class="site-header"><a href="/">Example blog</a><nav><a href="/about/">About</a>'
              '<a href="/archives/">Archives</a></nav></header>') if header else ""
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{title}</title>{head}</head><body>"
            f"{chrome}{body}<footer class=site-footer><p>Copyright 2024 Example. All rights reserved.</p>"
            "<a href=/privacy/>Privacy</a></footer></body></html>")


def post_entry(n: int, chars: int = 180) -> str:
    return (f'<article class="post-{n} post type-post hentry"><header><h2 class="entry-title">'
            f'<a href="{SITE}/2024/03/post-{n}/">How we made start-up {n}x faster</a></h2>'
            f'<time datetime="2024-03-{n + 1:02d}">March {n + 1}, 2024</time></header>'
            f'<div class="entry-summary"><p>{excerpt(n, chars)}</p></div>'
            f'<a class="more-link" href="/2024/03/post-{n}/">Read more</a>'
            f'<footer>Tags: <a href="/tag/python/">python</a>, <a href="/tag/performance/">performance</a>'
            "</footer></article>")


SIDEBAR = ('<aside id="secondary" class="widget-area"><h2>Recent posts</h2><ul>'
           + "".join(f'<li><a href="/2024/02/older-{n}/">An older post number {n}</a></li>' for n in range(5))
           + "</ul></aside>")

TAG_ARCHIVE = page(
    '<main id="main"><h1 class="page-title">Tag: <span>python</span></h1>'
    + "".join(post_entry(n) for n in range(5))
    + '<nav class="pagination"><a class="next" href="/tag/python/page/2/">Older posts</a></nav></main>' + SIDEBAR,
    title="python – Example blog")

DATE_ARCHIVE_PAGE_2 = page(
    '<div id="content"><h1>March 2024</h1>' + post_entry(7) + post_entry(8)
    + '<div class="nav-links"><a href="/2024/03/">Newer posts</a></div></div>',
    title="March 2024 – Page 2 – Example blog",
    head='<link rel="prev" href="https://blog.example.com/2024/03/">')

AUTHOR_PAGE = page(
    '<main><h1>Ada Lovelace</h1><div class="author-bio"><p>Ada writes about performance and tooling. '
    "Before joining the team she built compilers for ten years.</p></div>"
    + "".join(post_entry(n, 120) for n in range(4)) + "</main>",
    title="Ada Lovelace, author at Example blog")

SEARCH_RESULTS = page(
    '<main><h1>Search results for “cache”</h1><form role="search" action="/"><input type="search" name="s" '
    'value="cache"><button>Search</button></form><p>9 results</p><div class="results">'
    + "".join(f'<div class="result"><h3><a href="/2024/0{n % 9 + 1}/cache-{n}/">Caching, part {n}</a></h3>'
              f"<p>{excerpt(n, 220)}</p></div>" for n in range(9))
    + "</div></main>",
    title="Search results for “cache” – Example blog")

HC_BREADCRUMBS = ('<nav class="sub-nav"><ol class="breadcrumbs"><li><a href="/hc/en-us">Acme Help Center</a></li>'
                  '<li><a href="/hc/en-us/categories/200-Billing">Billing</a></li>{more}</ol>'
                  '<form role="search" class="search"><input type="search" name="query"></form></nav>')


def hc_article_link(n: int) -> str:
    return (f'<li class="article-list-item"><a href="/hc/en-us/articles/{300 + n}-How-to-{n}" '
            f'class="article-list-link">How do I change billing detail number {n}?</a></li>')


HC_CATEGORY = page(
    '<div class="container">' + HC_BREADCRUMBS.format(more="")
    + '<div class="category-container"><div class="category-content"><header class="page-header">'
    "<h1>Billing</h1><p class=page-header-description>Invoices, payments and plans.</p></header>"
    '<div id="main-content" class="section-tree">'
    + "".join(f'<section class="section"><h2 class="section-tree-title"><a href="/hc/en-us/sections/{10 + s}-'
              f'Topic-{s}">Billing topic {s}</a></h2><ul class="article-list">'
              + "".join(hc_article_link(s * 10 + n) for n in range(3))
              + f'</ul><a href="/hc/en-us/sections/{10 + s}-Topic-{s}" class="see-all-articles">See all 8 '
              "articles</a></section>" for s in range(3))
    + "</div></div></div></div>",
    title="Billing – Acme Help Center")

HC_SECTION = page(
    '<div class="container">'
    + HC_BREADCRUMBS.format(more='<li><a href="/hc/en-us/sections/10-Invoices">Invoices</a></li>')
    + '<div class="section-container"><section class="section-content"><header class="page-header">'
    '<h1>Invoices</h1></header><ul class="article-list">'
    + "".join(hc_article_link(n) for n in range(8))
    + '</ul><nav class="pagination"><a href="?page=2" rel="next">Next ›</a></nav></section></div></div>',
    title="Invoices – Acme Help Center")

HC_ARTICLE = page(
    '<div class="container">'
    + HC_BREADCRUMBS.format(more='<li><a href="/hc/en-us/sections/10-Invoices">Invoices</a></li>')
    + '<div class="article-container"><article id="main-content" class="article"><header class="article-header">'
    '<h1 class="article-title">How do I download an invoice?</h1></header><section class="article-info">'
    '<div class="article-body"><p>Every invoice is kept in your account for seven years. To download one, open '
    "Settings, then Billing, and pick the month you need.</p><ol><li>Open <strong>Settings</strong>.</li>"
    "<li>Choose <strong>Billing</strong>, then <strong>Invoices</strong>.</li><li>Click the download "
    "icon beside the invoice. It arrives as a PDF.</li></ol><p>Invoices list the company name and VAT number "
    "you entered when you subscribed; change them under Billing details before the next invoice is made.</p>"
    '</div></section></article><section class="article-relatives"><h3>Related articles</h3><ul>'
    + "".join(hc_article_link(n) for n in range(5))
    + "</ul></section></div></div>",
    title="How do I download an invoice? – Acme Help Center")

SHORT_POST = page(
    '<main><article class="post"><h1 class="entry-title">Quick tip: cache the config</h1>'
    '<div class="entry-content"><p>Read the configuration once and keep it: our start-up went from two '
    "seconds to one. The same works for templates.</p></div></article>"
    '<section class="related-posts"><h2>You might also like</h2>'
    + "".join(post_entry(n, 150) for n in range(4)) + "</section></main>",
    title="Quick tip: cache the config – Example blog")

DOCS_SECTION_INDEX = page(
    "<main><article><h1>User guide</h1><p>This guide walks through a project from installation to "
    "deployment. Each chapter builds on the previous one, so read them in order the first time; later, "
    "use them as a reference.</p><p>If you are upgrading from version 1, read the migration notes "
    "first: configuration files moved and two settings changed their defaults.</p><ul>"
    + "".join(f'<li><a href="{name.lower()}.html">{name}</a></li>'
              for name in ("Installation", "Configuration", "Templates", "Deployment", "Testing", "Upgrading"))
    + "</ul></article></main>",
    title="User guide – Acme docs")


@pytest.mark.parametrize("html", [TAG_ARCHIVE, DATE_ARCHIVE_PAGE_2, AUTHOR_PAGE, SEARCH_RESULTS, HC_CATEGORY,
                                  HC_SECTION],
                         ids=["tag_archive", "date_archive_page_2", "author", "search_results", "hc_category",
                              "hc_section"])
def test_listings_are_followed_not_indexed(html: str) -> None:
    verdict = classify_page(html, extracted_chars=1000, url=f"{SITE}/some/listing/")
    assert verdict.type is PageType.LISTING, verdict
    assert verdict.type in NOT_INDEXED


def test_each_listing_is_told_by_its_items_or_by_a_hint_with_fewer() -> None:
    url = f"{SITE}/x/"
    assert classify_page(TAG_ARCHIVE, extracted_chars=1000, url=url).reason == "repeated_items"
    # Two posts are a listing only with a hint: here the previous page's link and the archive title.
    assert classify_page(DATE_ARCHIVE_PAGE_2, extracted_chars=1000, url=url).reason == "pagination"
    bare = DATE_ARCHIVE_PAGE_2.replace('<link rel="prev" href="https://blog.example.com/2024/03/">', "")
    assert classify_page(bare, extracted_chars=1000, url=url).reason == "archive_title"
    untitled = bare.replace("<h1>March 2024</h1>", "<h1>Writing</h1>").replace("March 2024 – Page 2", "Writing")
    assert classify_page(untitled, extracted_chars=1000, url=url).reason == "entries"  # each post an <article>
    unmarked = untitled
    for tag in ("article", "header", "footer", "time"):
        unmarked = unmarked.replace(f"<{tag}", "<div").replace(f"</{tag}>", "</div>")
    assert classify_page(unmarked, extracted_chars=1000, url=url).type is PageType.CONTENT
    schema = '<script type="application/ld+json">{"@context":"https://schema.org","@type":["WebPage","CollectionPage"]}</script>'
    hinted = untitled.replace("</head>", schema + "</head>")
    assert classify_page(hinted, extracted_chars=1000, url=url).reason == "collection_schema"
    # A help centre's section of three articles sits under its breadcrumb trail.
    three = HC_SECTION.replace(hc_article_link(3), "").replace(hc_article_link(4), "").replace(
        hc_article_link(5), "").replace(hc_article_link(6), "").replace(hc_article_link(7), "").replace(
        '<nav class="pagination"><a href="?page=2" rel="next">Next ›</a></nav>', "")
    assert classify_page(three, extracted_chars=1000, url=url).reason == "breadcrumb"


@pytest.mark.parametrize("html", [HC_ARTICLE, SHORT_POST, DOCS_SECTION_INDEX],
                         ids=["hc_article", "short_post", "docs_section_index"])
def test_articles_and_indexes_with_prose_of_their_own_are_content(html: str) -> None:
    assert classify_page(html, extracted_chars=1000, url=f"{SITE}/page/").type is PageType.CONTENT


def test_links_to_other_sites_are_no_listing() -> None:
    """A list of links elsewhere (a curated list, a blogroll) is the page's own content."""
    elsewhere = TAG_ARCHIVE.replace(f'href="{SITE}/', 'href="https://other.example.org/').replace(
        'href="/', 'href="https://other.example.org/')
    assert classify_page(elsewhere, extracted_chars=1000, url=f"{SITE}/links/").type is PageType.CONTENT
    assert classify_page(TAG_ARCHIVE, extracted_chars=1000, url="https://www.blog.example.com/t/").type \
        is PageType.LISTING


def test_a_docs_generator_that_writes_pages_whole_keeps_its_indexes() -> None:
    """A Sphinx or MkDocs index of a section is documentation, however few words it has."""
    assert classify_page(HC_SECTION, extracted_chars=1000, generator="sphinx").type is PageType.CONTENT
    assert classify_page(HC_SECTION, extracted_chars=1000, generator="mkdocs").type is PageType.CONTENT
    assert classify_page(HC_SECTION, extracted_chars=1000, generator="docusaurus").type is PageType.LISTING


def test_two_or_three_entries_marked_as_entries_make_a_listing() -> None:
    """A tag page with three posts and no other hint: each item an <article>, its title link
    rel="bookmark" (Hugo Mainroad's and WordPress themes' archives), or dated by a <time>."""
    entries = "".join(f'<article class="list__item post"><h2><a href="/posts/p-{n}/">Post number {n}</a></h2>'
                      f"<div>{excerpt(n, 500)}</div></article>" for n in range(3))
    tag = page(f"<main><h1>process</h1>{entries}</main>", title="process - Example blog")
    assert classify_page(tag, extracted_chars=1000, url=f"{SITE}/tags/process/").type is PageType.LISTING
    bookmarked = tag.replace("<article", "<div").replace("</article>", "</div>").replace(
        '<a href="/posts', '<a rel="bookmark" href="/posts')
    assert classify_page(bookmarked, extracted_chars=1000, url=f"{SITE}/tags/process/").type is PageType.LISTING
    plain = bookmarked.replace(' rel="bookmark"', "")
    assert classify_page(plain, extracted_chars=1000, url=f"{SITE}/tags/process/").type is PageType.CONTENT
    # Eleventy's base blog: a list of links, each dated by a <time>.
    dated = page('<main><h1>Latest 3 Posts</h1><ol class="postlist">' + "".join(
        f'<li><a href="/blog/p-{n}/">Post number {n}</a> <time datetime="2024-03-0{n + 1}">{n + 1} March 2024</time></li>'
        for n in range(3)) + "</ol></main>")
    assert classify_page(dated, extracted_chars=1000, url=f"{SITE}/").type is PageType.LISTING
    assert classify_page(dated.replace("<time", "<span").replace("</time>", "</span>"), extracted_chars=1000,
                         url=f"{SITE}/").type is PageType.CONTENT


def overlay_entry(n: int) -> str:
    """A card whose heading is no link: an empty link named by aria-label lies over the card (Hugo
    PaperMod's post list, Bootstrap's stretched-link)."""
    return (f'<article class="post-entry"><header class="entry-header"><h2>How we made start-up {n}x faster</h2>'
            f'</header><div class="entry-content"><p>{excerpt(n, 400)}</p></div>'
            f'<footer class="entry-footer"><span>March {n + 1}, 2024</span> · 7 min · Jane Doe</footer>'
            f'<a class="entry-link" aria-label="post link to How we made start-up {n}x faster" '
            f'href="/posts/start-up-{n}/"></a></article>')


def test_cards_under_a_stretched_link_are_entries() -> None:
    posts = page('<main class="main"><header class="page-header"><h1>Posts</h1></header>'
                 + "".join(overlay_entry(n) for n in range(5)) + "</main>", title="Posts | Example blog")
    assert classify_page(posts, extracted_chars=1000, url=f"{SITE}/posts/").type is PageType.LISTING
    # Without its name the empty link is an icon's, and the cards hold no link to a page.
    unnamed = posts.replace('aria-label="post link to', 'data-x="')
    assert classify_page(unnamed, extracted_chars=1000, url=f"{SITE}/posts/").type is PageType.CONTENT


def test_whole_posts_that_link_their_own_pages_are_entries() -> None:
    """A front page that shows whole posts, each titled by a link to its own page (WordPress's
    ``h2.entry-title``), is a listing: the posts are stored from their pages, under their own URLs
    and titles, not twice. Whole posts whose titles link nowhere are the page's own text (as they
    were before), and so is a post whose title links to the page itself."""
    whole = page("<main><h1>Example blog</h1>" + "".join(post_entry(n, 1500) for n in range(5)) + "</main>")
    assert classify_page(whole, extracted_chars=1000, url=f"{SITE}/").type is PageType.LISTING
    unlinked = re.sub(r'<h2 class="entry-title"><a href="[^"]*">([^<]*)</a></h2>', r"<h2>\1</h2>", whole)
    assert classify_page(unlinked, extracted_chars=1000, url=f"{SITE}/").type is PageType.CONTENT
    # Pelican's front page: the newest post whole, then the others' summaries.
    featured = page(f'<aside id="featured"><article><h1 class="entry-title"><a href="/p-9.html" rel="bookmark">'
                    f"Post nine</a></h1><p>{excerpt(9, 3000)}</p></article></aside><section><h1>Other articles</h1>"
                    '<ol id="posts-list">' + "".join(f'<li><article class="hentry"><h2><a href="/p-{n}.html" '
                                                     f'rel="bookmark">Post {n}</a></h2><p>{excerpt(n)}</p></article></li>'
                                                     for n in range(2)) + "</ol></section>")
    assert classify_page(featured, extracted_chars=1000, url=f"{SITE}/").type is PageType.LISTING
    post = featured.replace('href="/p-9.html"', f'href="{SITE}/p-9.html"')
    assert classify_page(post, extracted_chars=1000, url=f"{SITE}/p-9.html").type is PageType.CONTENT
