"""A crawl of a small blog and help centre: its listings (the front page and its second page, a
tag archive, an author page, the help centre's home, category and section pages) are followed but
not stored, and every post and article is stored."""

from __future__ import annotations

from pathlib import Path

from tests.crawl import NO_EMBEDDING, crawl
from tests.servers.sitesrv import Route, SiteServer
from tests.test_listings import HC_BREADCRUMBS, SIDEBAR, WORDS, page

HTML = {"Content-Type": "text/html; charset=utf-8"}
POSTS = [f"/2024/03/post-{n}/" for n in range(7)]
ARTICLES = [f"/hc/articles/{n}-question-{n}/" for n in range(6)]
SECTIONS = ["/hc/sections/1-invoices/", "/hc/sections/2-plans/"]
LISTINGS = ["/", "/page/2/", "/tag/python/", "/author/ada/", "/hc/", "/hc/categories/1-billing/",
            "/hc/categories/2-accounts/", "/hc/categories/3-security/", "/hc/categories/4-api/", *SECTIONS]
CATEGORY_CRUMB = '<li><a href="/hc/categories/1-billing/">Billing</a></li>'



def entry(n: int) -> str:
    return (f'<article class="post"><header><h2><a href="{POSTS[n]}">Making start-up faster, part {n}</a></h2>'
            f"<time>March {n + 1}, 2024</time></header><p>{(WORDS * 2)[:160]}</p>"
            f'<a href="{POSTS[n]}">Continue reading</a> <a href="/author/ada/">Ada</a></article>')


def post(n: int) -> str:
    body = "".join(f"<p>Part {n}, step {k}: {WORDS * 2}</p>" for k in range(4))
    return page(f'<main><article class="post"><h1>Making start-up faster, part {n}</h1><p class="byline">By '
                f'<a href="/author/ada/">Ada</a></p>{body}<footer>Tagged <a href="/tag/python/">python</a></footer>'
                '</article><section class="related"><h2>Related posts</h2>'
                + "".join(entry(k) for k in range(7) if k != n)[:3000] + "</section></main>" + SIDEBAR,
                title=f"Making start-up faster, part {n}")


def article(n: int) -> str:
    section = SECTIONS[n % 2]
    crumbs = HC_BREADCRUMBS.format(more=f'<li><a href="{section}">Section</a></li>').replace(
        "/hc/en-us/categories/200-Billing", "/hc/categories/1-billing/").replace('"/hc/en-us"', '"/hc/"')
    others = "".join(f'<li><a href="{ARTICLES[k]}">Question {k} about invoices and plans</a></li>'
                     for k in range(6) if k != n)
    return page(f'<div class="container">{crumbs}<article class="article"><h1>Question {n}: how do invoices '
                f"work?</h1><div class=article-body><p>Answer {n}. {WORDS * 3}</p><ol><li>Open Settings.</li>"
                f"<li>Choose Billing.</li></ol></div></article><section class=relatives><h3>Related articles</h3>"
                f"<ul>{others}</ul></section></div>", title=f"Question {n} – Acme Help Center")


def listing(title: str, items: str, head: str = "", trail: str = "") -> str:
    crumbs = f'<ol class="breadcrumbs"><li><a href="/hc/">Help</a></li>{trail}</ol>' if trail else ""
    return page(f"<main>{crumbs}<h1>{title}</h1>{items}</main>", title=title, head=head)


CATEGORIES = ["/hc/categories/1-billing/", "/hc/categories/2-accounts/", "/hc/categories/3-security/",
              "/hc/categories/4-api/"]


def article_list(numbers: range | list[int]) -> str:
    return "<ul class=article-list>" + "".join(
        f'<li><a href="{ARTICLES[n]}">Question {n} about invoices and plans</a></li>' for n in numbers) + "</ul>"


def routes() -> dict[str, Route]:
    site = {
        "/robots.txt": "User-agent: *\nDisallow:\n",
        "/": listing("Example blog", "".join(entry(n) for n in range(5))
                     + '<nav class=pagination><a href="/page/2/">Older posts</a></nav><a href="/hc/">Help</a>'),
        "/page/2/": listing("Example blog – Page 2", entry(5) + entry(6), head='<link rel="prev" href="/">'),
        "/tag/python/": listing("Tag: python", "".join(entry(n) for n in range(0, 7, 2))),
        "/author/ada/": listing("Posts by Ada", "<p>Ada writes about tooling.</p>"
                                + "".join(entry(n) for n in range(1, 7, 2))),
        "/hc/": listing("Acme Help Center", "<div class=blocks>" + "".join(
            f'<a class=blocks-item href="{path}"><h4>Category {k}</h4><span>Questions and answers</span></a>'
            for k, path in enumerate(CATEGORIES)) + "</div>"),
        CATEGORIES[0]: listing("Billing", "".join(
            f'<section><h2><a href="{section}">Topic {k}</a></h2>{article_list(range(k, 6, 2))}</section>'
            for k, section in enumerate(SECTIONS)), trail="<li>Billing</li>"),
        SECTIONS[0]: listing("Invoices", article_list(range(0, 6, 2)), trail=CATEGORY_CRUMB),
        SECTIONS[1]: listing("Plans", article_list(range(1, 6, 2)), trail=CATEGORY_CRUMB),
        **{path: listing(f"Category {k + 1}", article_list([k, k + 1]), trail=f"<li>Category {k + 1}</li>")
           for k, path in enumerate(CATEGORIES[1:])},
        **{path: post(n) for n, path in enumerate(POSTS)},
        **{path: article(n) for n, path in enumerate(ARTICLES)},
    }
    return {path: Route(body, headers=HTML if path != "/robots.txt" else {"Content-Type": "text/plain"})
            for path, body in site.items()}


def test_listings_are_followed_and_not_stored_and_every_article_is(tmp_path: Path) -> None:
    with SiteServer(routes=routes()) as server:
        result = crawl("site", server.url, tmp_path, settings=NO_EMBEDDING, timeout=180)
        requested = set(server.paths())
    assert result.returncode == 0, result.output[-3000:]
    stored = sorted("/" + item["url"].removeprefix(server.url) for item in result.items)
    assert stored == sorted(POSTS + ARTICLES), stored
    assert set(LISTINGS) <= requested
    skipped = result.report["skipped_by_reason"]
    assert skipped.get("listing") == len(LISTINGS), skipped
