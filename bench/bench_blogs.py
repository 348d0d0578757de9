r"""Blogs built by real themes: what a crawl stores and how close each post is to its source.

The blog fixtures (``tests/fixtures/blogs/``: three posts built by Hugo with PaperMod, Ananke,
Mainroad, Beautiful Hugo, Coder and Stack, by Jekyll with minima, by Pelican with notmyidea and
simple, by Hexo with landscape and by Eleventy's starter blog) are each served on loopback and
crawled by ``scrapy crawl site`` (in process, no embedding). Per site:

- **posts / other pages stored:** of the three posts, and pages that are not posts (a home, a post
  list or a tag page stored as content rather than followed as a listing);
- **lines lost:** the lines of the posts' Markdown sources whose words the stored Markdown does not
  hold (front matter, HTML comments, link definitions and images aside: a story's photos are left
  out by design);
- **lines added:** the stored Markdown's lines whose words the source does not hold (a title block,
  a byline, a date, a reading time, a share box, "Link to heading");
- **title kept:** posts whose Markdown starts with their title;
- **titled / dated / authored:** posts whose item has the post's title (not the site's name), its
  date as `published`, and its author.

Run it on another checkout to compare (the fixtures and this script copied into it):

    .venv/bin/python bench/bench_blogs.py [--json-out bench/results/blogs.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.blogs import BLOGS, POSTS, SITES, lost_and_added, post_paths
from tests.crawl import NO_EMBEDDING, crawl
from tests.servers.sitesrv import SiteServer


def measure(site: str, workdir: Path) -> dict:
    with SiteServer(root=BLOGS / "site" / site) as server:
        result = crawl("site", server.url, workdir / site, settings=NO_EMBEDDING, timeout=300)
    base = server.url.rstrip("/")
    paths = post_paths(site)
    row = {"site": site, "returncode": result.returncode, "posts": 0, "other_pages": [], "lines_lost": 0,
           "lines_added": 0, "title_kept": 0, "titled": 0, "dated": 0, "authored": 0, "added": []}
    for item in result.items:
        path = item["url"].removeprefix(base)
        if path not in paths:
            row["other_pages"].append(path)
            continue
        slug = paths[path]
        lost, added = lost_and_added(item["markdown"], slug)
        row["posts"] += 1
        row["lines_lost"] += len(lost)
        row["lines_added"] += len(added)
        row["added"] += added[:5]
        title, date = POSTS[slug]
        row["title_kept"] += item["markdown"].startswith(("# ", title))
        row["titled"] += item["title"] == title
        row["dated"] += (item.get("published") or "").startswith(date)
        row["authored"] += item.get("author") == "Jane Doe"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for site in SITES:
            rows.append(measure(site, Path(tmp)))
            row = rows[-1]
            print(f"{site:20s} posts {row['posts']}/{len(POSTS)}  other pages {len(row['other_pages'])}  "
                  f"lines lost {row['lines_lost']}  added {row['lines_added']}  title kept {row['title_kept']}  "
                  f"titled {row['titled']}  dated {row['dated']}  authored {row['authored']}", flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, check=False,
                            text=True).stdout.strip()
    report = {"date": datetime.date.today().isoformat(), "commit": commit, "sites": rows}
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
