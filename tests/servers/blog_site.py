"""A small blog with no sitemap, whose posts are listed only by its feeds.

The home page declares an RSS 2.0 feed (WordPress's: ``/feed/``, then ``/feed/?paged=2``; past the
last page, 404), an Atom feed (``/atom.xml``, ``rel=next`` to a gzipped second page) and a comments
feed (its entries are comments, not posts). Each post's date in the feeds is ``Blog.dates``; edit it
and the post's text changes with it. Serve it with ``SiteServer(dynamic=blog.resolve)`` and set
``blog.base`` to the server's URL.
"""

from __future__ import annotations

import gzip
import random
from datetime import UTC, datetime
from email.utils import format_datetime
from html import escape
from urllib.parse import parse_qs, urlsplit

from tests.servers.sitesrv import Route

WORDS = ("crawler", "feed", "queue", "parser", "lattice", "garden", "river", "compiler", "signal", "harvest",
         "orchard", "ledger", "socket", "window", "tunnel", "beacon", "meadow", "archive", "kernel", "bridge")
RSS_PAGES = ((8, 7, 6, 5), (4, 3))  # posts on /feed/ and /feed/?paged=2, newest first
ATOM_PAGES = ((2, 8), (1,))  # posts on /atom.xml and on its next page; 8 is in the RSS feed too
POSTS = tuple(range(1, 9))
XML = {"Content-Type": "application/rss+xml; charset=UTF-8"}
ATOM = {"Content-Type": "application/atom+xml"}


def post_path(number: int) -> str:
    return f"/2025/01/post-{number}/"


def post_text(number: int, date: datetime) -> str:
    rng = random.Random(number * 1000 + date.toordinal())
    return " ".join(rng.choice(WORDS) for _ in range(80)).capitalize() + "."


class Blog:
    def __init__(self) -> None:
        self.base = ""
        self.dates = {number: datetime(2025, 1, number, 9, 30, tzinfo=UTC) for number in POSTS}

    def url(self, number: int) -> str:
        return self.base + post_path(number)

    def resolve(self, full_path: str) -> Route | None:
        parts = urlsplit(full_path)
        path, query = parts.path, parse_qs(parts.query)
        if path == "/":
            return Route(self.home())
        if path == "/feed/":
            page = int(query.get("paged", ["1"])[0])
            return Route(self.rss(RSS_PAGES[page - 1]), headers=XML) if page <= len(RSS_PAGES) else None
        if path == "/atom.xml":
            return Route(self.atom(ATOM_PAGES[0], next_href="/atom-2.xml.gz"), headers=ATOM)
        if path == "/atom-2.xml.gz":
            body = gzip.compress(self.atom(ATOM_PAGES[1]).encode())
            return Route(body, headers={"Content-Type": "application/gzip"})
        if path == "/comments/feed/":
            return Route(self.rss((), comments=True), headers=XML)
        for number in POSTS:
            if path == post_path(number):
                return Route(self.post(number))
        return None

    def home(self) -> str:
        return (
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Field notes</title>'
            '<link rel="alternate" type="application/rss+xml" title="Field notes &raquo; Feed" href="/feed/">'
            '<link rel="alternate" type="application/rss+xml" title="Comments" href="/comments/feed/">'
            '<link rel="alternate" type="application/atom+xml" href="/atom.xml">'
            "</head><body><h1>Field notes</h1><p>Notes from the field, one post at a time.</p></body></html>"
        )

    def post(self, number: int) -> str:
        title = f"Post number {number}: on {WORDS[number]}"
        return (
            f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head><body>'
            f'<header><a href="/">Field notes</a></header><main><article><h1>{title}</h1>'
            f"<p>{post_text(number, self.dates[number])}</p>"
            f"<p>{post_text(number + 100, self.dates[number])}</p></article></main>"
            "<footer>&copy; Field notes</footer></body></html>"
        )

    def rss(self, numbers: tuple[int, ...], comments: bool = False) -> str:
        items = "".join(
            f"<item><title>Post {number}</title><link>{self.url(number)}</link>"
            f"<pubDate>{format_datetime(self.dates[number])}</pubDate>"
            f'<guid isPermaLink="false">{self.base}/?p={number}</guid></item>'
            for number in numbers
        )
        if comments:
            items = "".join(f"<item><title>A comment</title><link>{self.url(n)}#comment-{n}</link>"
                            f"<pubDate>{format_datetime(datetime.now(UTC))}</pubDate></item>" for n in POSTS)
        return (
            '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0" '
            'xmlns:atom="http://www.w3.org/2005/Atom"><channel><title>Field notes</title>'
            f"<link>{self.base}/</link><generator>https://wordpress.org/?v=6.5.2</generator>{items}</channel></rss>"
        )

    def atom(self, numbers: tuple[int, ...], next_href: str | None = None) -> str:
        entries = "".join(
            f"<entry><title>Post {number}</title><id>tag:notes,{number}</id>"
            f'<link rel="alternate" type="text/html" href="{escape(post_path(number))}"/>'
            f"<published>2024-12-01T00:00:00Z</published>"
            f"<updated>{self.dates[number].isoformat()}</updated></entry>"
            for number in numbers
        )
        pager = f'<link rel="next" href="{next_href}"/>' if next_href else ""
        return (
            '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
            f"<title>Field notes</title><id>tag:notes</id>{pager}{entries}</feed>"
        )
