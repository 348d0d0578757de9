r"""Extraction on real documentation sites of many generators, against each site's own main element.

Debian ships the HTML of many projects' manuals, each built by its own generator and theme. For
each site installed here, a sample of its pages goes through `extract_page`, and the Markdown is
compared with the text of the element the generator itself writes the content into (the reference
selector below, chosen by reading the site's HTML, never by Harvester's code):

- **recall / precision:** the share of the reference's word trigrams (with counts) that the
  Markdown holds, and of the Markdown's trigrams that the reference holds. Link targets, Markdown
  markers and escapes are left out first, so they are words against words; a page's in-page table
  of contents, which the reference holds and Harvester drops, costs recall.
- **headings / code blocks:** the share of pages whose Markdown has as many ATX headings as the
  reference has `h1`-`h6` elements, and as many fenced blocks as it has outermost `<pre>`.
- **profile:** the share of pages a generator profile recognised, and the most common profile.

Sites whose package is not installed are skipped; install them with apt-get (the packages named
below). Run:

    .venv/bin/python bench/bench_generators.py [--sites mkdocs,junit] [--pages 40] \
        [--json-out bench/results/generators.json]
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import lxml.html

REPO = Path(__file__).resolve().parent.parent
# Appended, not prepended: a PYTHONPATH naming another checkout measures that checkout's extraction.
sys.path.append(str(REPO))

from bench.bench_extraction import pctl
from harvester.extract.page import NoContent, extract_page

# name: (Debian package, root, reference selector, what built it[, chrome inside the reference])
SITES: dict[str, tuple[str, ...]] = {
    "flask": ("python-flask-doc", "/usr/share/doc/python-flask-doc/html", "div.body[role=main]",
              "Sphinx, pallets theme"),
    "django": ("python-django-doc", "/usr/share/doc/python-django-doc/html", "div#yui-main div.yui-g",
               "Sphinx, Django's theme"),
    "python": ("python3.11-doc", "/usr/share/doc/python3.11/html", "div.body[role=main]",
               "Sphinx, Python's theme"),
    "sqlalchemy": ("python-sqlalchemy-doc", "/usr/share/doc/python-sqlalchemy-doc/html", "div#docs-body",
                   "Sphinx, zzzeeksphinx (scripts at the end of the body)"),
    "celery": ("python-celery-doc", "/usr/share/doc/python-celery-doc/html", "div.body[role=main]",
               "Sphinx, celery theme"),
    "mkdocs": ("mkdocs-doc", "/usr/share/doc/mkdocs/html", "div.col-md-9[role=main]",
               "MkDocs, built-in theme, no generator meta"),
    "rust-book": ("rust-doc", "/usr/share/doc/rust-doc/html/book", "main", "mdBook"),
    "rust-std": ("rust-doc", "/usr/share/doc/rust-doc/html/std", "section#main-content", "rustdoc",
                 "span.rightside, div.rightside, span.out-of-band, a.test-arrow, span.notable-traits, summary.hideme"),
    "junit": ("junit4-doc", "/usr/share/doc/junit4/api", "main", "Javadoc (JDK 11 layout)"),
    "doxygen": ("doxygen-doc", "/usr/share/doc/doxygen/html", "div.contents", "Doxygen"),
    "git": ("git-doc", "/usr/share/doc/git-doc", "div#header, div#content", "AsciiDoc"),
    "postgresql": ("postgresql-doc-15", "/usr/share/doc/postgresql-doc-15/html",
                   "body > div:not(.navheader):not(.navfooter)", "DocBook XSL"),
    "gtk": ("libgtk-3-doc", "/usr/share/gtk-doc/html/gtk3", "body > div:not(.toc):not(.footer)", "gtk-doc"),
    "apache": ("apache2-doc", "/usr/share/doc/apache2-doc/manual/en", "div#page-content",
               "Apache's own XSLT"),
}
SKIPPED_FILES = re.compile(r"(^|/)(genindex|py-modindex|search|index-all|allclasses|overview-tree)[^/]*\.html$"
                           r"|/_(sources|modules|static)/|/src-html/|/class-use/")
# A reference of fewer characters is no content page when Harvester finds the page too short too.
SHORT_PAGE = 200
_WORDS = re.compile(r"\w+")
_LINK_TARGET = re.compile(r"\]\([^)\s]*(?:\s+\"[^\"]*\")?\)")
_ESCAPE = re.compile(r"\\(.)")


def trigrams(text: str) -> collections.Counter:
    words = _WORDS.findall(text.lower())
    return collections.Counter(zip(words, words[1:], words[2:]))


def markdown_words(md: str) -> str:
    return _ESCAPE.sub(r"\1", _LINK_TARGET.sub("]", md))


def reference(html: bytes, selector: str, chrome: str = "") -> lxml.html.HtmlElement | None:
    doc = lxml.html.fromstring(html)
    junk = doc.xpath("//script|//style|//a[contains(concat(' ', @class, ' '), ' headerlink ')]")
    for el in junk + (doc.cssselect(chrome) if chrome else []):
        if el.getparent() is not None:
            el.drop_tree()
    found = doc.cssselect(selector)
    outermost = [el for el in found if not any(a in found for a in el.iterancestors())]
    if not outermost:
        return None
    holder = lxml.html.Element("div")
    holder.extend(outermost)
    return holder


def measure(html: bytes, url: str, selector: str, chrome: str = "") -> dict | None:
    """The page's figures; None for a page whose reference holds no content (an index of a few
    links that Harvester too finds too short to keep)."""
    ref = reference(html, selector, chrome)
    if ref is None or not ref.text_content().strip():
        return None
    started = time.process_time()
    try:
        page = extract_page(html.decode("utf-8", "replace"), url)
    except NoContent:
        if len(" ".join(ref.text_content().split())) < SHORT_PAGE:
            return None
        markdown, generator = "", None
    else:
        markdown, generator = page.markdown, page.generator
    cpu_ms = (time.process_time() - started) * 1000
    ref_grams, md_grams = trigrams(ref.text_content()), trigrams(markdown_words(markdown))
    shared = sum((ref_grams & md_grams).values())
    pres = [pre for pre in ref.iter("pre") if next(pre.iterancestors("pre"), None) is None]
    return {
        "recall": shared / max(1, sum(ref_grams.values())),
        "precision": shared / max(1, sum(md_grams.values())) if md_grams else 0.0,
        "headings_equal": len(ref.xpath(".//h1|.//h2|.//h3|.//h4|.//h5|.//h6"))
        == len(re.findall(r"(?m)^#{1,6} ", markdown)),
        "code_equal": len(pres) == len(re.findall(r"(?m)^ *(?:```|~~~)", markdown)) // 2,
        "generator": generator,
        "cpu_ms": cpu_ms,
    }


def run_site(name: str, pages: int) -> dict | None:
    package, root, selector, built_by, *rest = SITES[name]
    chrome = rest[0] if rest else ""
    base = Path(root)
    if not base.is_dir():
        print(f"{name}: {package} is not installed, skipped", file=sys.stderr)
        return None
    files = sorted(p for p in base.rglob("*.html") if not SKIPPED_FILES.search("/" + str(p.relative_to(base))))
    random.Random(7).shuffle(files)
    rows = []
    for path in files:
        if len(rows) == pages:
            break
        row = measure(path.read_bytes(), "http://127.0.0.1:8000/" + str(path.relative_to(base)), selector, chrome)
        if row is not None:
            rows.append(row | {"page": str(path.relative_to(base))})
    if not rows:
        return None
    profiles = collections.Counter(r["generator"] for r in rows)
    worst = sorted(rows, key=lambda r: r["recall"])[:3]
    return {
        "package": package, "built_by": built_by, "reference": selector, "pages": len(rows),
        "profile": profiles.most_common(1)[0][0], "profile_share": sum(1 for r in rows if r["generator"]) / len(rows),
        "recall_median": statistics.median(r["recall"] for r in rows),
        "recall_p10": pctl([r["recall"] for r in rows], 10),
        "precision_median": statistics.median(r["precision"] for r in rows),
        "precision_p10": pctl([r["precision"] for r in rows], 10),
        "headings_equal": sum(r["headings_equal"] for r in rows) / len(rows),
        "code_equal": sum(r["code_equal"] for r in rows) / len(rows),
        "cpu_ms_median": statistics.median(r["cpu_ms"] for r in rows),
        "lowest_recall": [(r["page"], round(r["recall"], 3)) for r in worst],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", default=",".join(SITES), help="comma-separated names (default: all)")
    parser.add_argument("--pages", type=int, default=40, help="pages sampled per site")
    parser.add_argument("--json-out", type=Path)
    options = parser.parse_args()
    results = {}
    print("| site | built by | pages | profile | recall med / p10 | precision med / p10 | headings | code | CPU ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in options.sites.split(","):
        figures = run_site(name, options.pages)
        if figures is None:
            continue
        results[name] = figures
        print(f"| {name} | {figures['built_by']} | {figures['pages']} | {figures['profile']} "
              f"({figures['profile_share']:.2f}) | {figures['recall_median']:.3f} / {figures['recall_p10']:.3f} | "
              f"{figures['precision_median']:.3f} / {figures['precision_p10']:.3f} | "
              f"{figures['headings_equal']:.2f} | {figures['code_equal']:.2f} | {figures['cpu_ms_median']:.1f} |",
              flush=True)
    if options.json_out:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, check=True,
                                text=True).stdout.strip()
        options.json_out.write_text(json.dumps({"date": datetime.date.today().isoformat(), "commit": commit,
                                                "pages_per_site": options.pages, "sites": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
