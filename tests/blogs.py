"""The blog fixture sites (``tests/fixtures/blogs/``) and how a post's Markdown is held to its
source: shared by the crawl tests (``tests/test_e2e_blogs.py``) and ``bench/bench_blogs.py``."""

from __future__ import annotations

import re
from pathlib import Path

BLOGS = Path(__file__).resolve().parent / "fixtures" / "blogs"
POSTS = {  # slug -> (title, date)
    "security-releases": ("Our security release process", "2024-03-12"),
    "streaming": ("Streaming our meetings to YouTube", "2024-02-11"),
    "internal-errors": ("Using internal errors", "2024-04-13"),
}
HUGO_LISTINGS = {"/", "/posts/", "/tags/engineering/", "/tags/process/"}
PELICAN_LISTINGS = {"/", "/author/jane-doe.html", "/category/engineering.html", "/tag/engineering.html",
                    "/tag/process.html"}
SITES = {  # site -> (each post's path, the listings among its pages)
    "hugo-papermod": ("/posts/{slug}/", HUGO_LISTINGS),
    "hugo-ananke": ("/posts/{slug}/", HUGO_LISTINGS),
    "hugo-mainroad": ("/posts/{slug}/", HUGO_LISTINGS),
    "hugo-beautifulhugo": ("/posts/{slug}/", {"/", "/posts/", "/tags/"}),
    # Their home pages show no post: navigation only.
    "hugo-coder": ("/posts/{slug}/", HUGO_LISTINGS - {"/"}),
    "hugo-stack": ("/posts/{slug}/", HUGO_LISTINGS - {"/"}),
    "jekyll-minima": ("/{date}/{slug}.html", {"/"}),
    # notmyidea's home shows the newest post whole, titled by a link to its page.
    "pelican-notmyidea": ("/{title}.html", PELICAN_LISTINGS),
    "pelican-simple": ("/{title}.html", PELICAN_LISTINGS),
    # Line-numbered highlight.js blocks (figure.highlight tables); its month archives list no post.
    "hexo-landscape": ("/{date}/{slug}/", {"/", "/archives/", "/archives/2024/", "/categories/Engineering/",
                                            "/tags/engineering/", "/tags/process/"}),
    # Lists of links dated by a <time>.
    "eleventy-base-blog": ("/blog/{slug}/", {"/", "/blog/", "/tags/engineering/", "/tags/process/"}),
}
# Sites whose posts name their author nowhere a page's metadata is read from (Ananke's "By <strong>"
# and Mainroad's and Stack's plain bylines link no author page; Eleventy's starter shows none).
NO_AUTHOR = {"hugo-ananke", "hugo-mainroad", "hugo-stack", "eleventy-base-blog"}
# Sites whose code blocks do not say their language (Pelican's Pygments blocks).
UNLABELLED_CODE = {"pelican-notmyidea", "pelican-simple"}


def post_paths(site: str) -> dict[str, str]:
    """Each post's path on ``site``, by slug."""
    pattern = SITES[site][0]
    return {pattern.format(slug=slug, date=date.replace("-", "/"), title="-".join(words(title).split())): slug
            for slug, (title, date) in POSTS.items()}


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


def lost_and_added(markdown: str, slug: str) -> tuple[list[str], list[str]]:
    """The source's lines whose words the Markdown does not hold, and the Markdown's lines whose
    words the source does not hold (a byline, a date, a reading time, a share box)."""
    written, got = source(slug), words(markdown)
    every = words(written)
    # A fence's language is not text, and a page need not say it.
    lost = [line for line in written.splitlines()
            if words(line) and words(line) not in got and not line.lstrip().startswith("```")]
    added = [line for line in markdown.splitlines() if words(line) and words(line) not in every]
    return lost, added
