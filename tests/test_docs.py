"""The documentation: the README stays short and true, the MkDocs site builds with ``--strict``, and
Harvester crawls its own built site cleanly (every page, the settings tables, fenced code, no
Material chrome) and finds the right page for a question."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from decimal import ROUND_HALF_UP, Decimal
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from harvester.config.spec import defaults
from tests.crawl import REPO, crawl, run_scrapy
from tests.servers.sitesrv import SiteServer

DOCS = REPO / "docs"
README = REPO / "README.md"
README_LIMIT = 10 * 1024
TWO_COMMANDS = (
    "scripts/bootstrap.sh && .venv/bin/scrapy crawl docs -a start=https://flask.palletsprojects.com/en/stable/ -O pages.jsonl",
    "scripts/bootstrap.sh --test && .venv/bin/python -m pytest",
)
# Material's chrome around every page: it must be in the built HTML (else this list is stale) and
# never in the Markdown Harvester stores.
MATERIAL_CHROME = ("Skip to content", "Back to top", "Made with", "Copy to clipboard", "Table of contents", "¶")
FENCE = re.compile(r"^```(\w+)\n(.*?)\n```$", re.MULTILINE | re.DOTALL)
SOURCE_LINK = re.compile(r"\]\(([\w./-]+\.md)(?:#[\w-]*)?\)")


def build_site(dest: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of the repository's site into ``dest``."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO / "mkdocs.yml"),
         "--site-dir", str(dest)],
        check=False, cwd=REPO, capture_output=True, text=True, timeout=120,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def nav_pages() -> dict[str, str]:
    """Every page of mkdocs.yml's nav: source file -> nav title."""
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    pages: dict[str, str] = {}

    def walk(entries: list) -> None:
        for entry in entries:
            for title, target in entry.items():
                if isinstance(target, list):
                    walk(target)
                else:
                    pages[target] = title

    walk(config["nav"])
    return pages


def page_path(source: str) -> str:
    """The URL path (under the site root) MkDocs gives a source file, with directory URLs."""
    stem = source.removesuffix(".md")
    if stem == "index":
        return ""
    return stem.removesuffix("/index") + "/"


def h1(source: str) -> str:
    return re.search(r"^# (.+)$", (DOCS / source).read_text(encoding="utf-8"), re.MULTILINE).group(1)


# --------------------------------------------------------------------------
# The README
# --------------------------------------------------------------------------

def test_readme_is_short_and_opens_with_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= README_LIMIT, f"README.md is {len(text.encode())} bytes"
    before_first_section = text.split("\n## ", 1)[0]
    for command in TWO_COMMANDS:
        assert f"    {command}\n" in before_first_section, f"README must open with: {command}"


def test_readme_links_resolve():
    text = README.read_text(encoding="utf-8")
    targets = [t for t in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) if "://" not in t]
    assert targets, "the README links no documentation page"
    missing = [t for t in targets if not (REPO / t).exists()]
    assert not missing, f"README links to missing files: {missing}"
    linked = {t.removeprefix("docs/") for t in targets if t.startswith("docs/")}
    unlinked = set(nav_pages()) - linked
    assert not unlinked, f"README does not link these docs pages: {sorted(unlinked)}"


FIGURES = REPO / "bench" / "figures.toml"
DECIMAL = re.compile(r"(?<![\w.,-])\d+\.\d+(?![\d.])")


def quoted_figures() -> list[dict[str, str]]:
    """The figures README.md and docs/ quote from bench/results/ (bench/figures.toml)."""
    with FIGURES.open("rb") as handle:
        return tomllib.load(handle)["figure"]


def result_values(document: Any, path: str | list[str]) -> list[float]:
    """The numbers at a dotted ``path`` of a result file (a list of keys where a key holds a dot),
    ``*`` standing for every item of a list."""
    found = [document]
    for key in path if isinstance(path, list) else path.split("."):
        if key == "*":
            found = [item for value in found for item in value]
        else:
            found = [value[int(key)] if isinstance(value, list) else value[key] for value in found]
    return [float(value) for value in found]


def figure_values(figure: dict[str, Any]) -> list[float]:
    """The numbers ``figure`` quotes: those at its ``path``, less the one at ``minus`` or divided by
    the one at ``divide_by`` where it names one (a difference or ratio of two results), times
    ``scale`` where it gives one (another unit, or a count the page multiplies by)."""
    document = json.loads((REPO / figure["file"]).read_text(encoding="utf-8"))
    values = result_values(document, figure["path"])
    if "minus" in figure:
        values = [value - result_values(document, figure["minus"])[0] for value in values]
    if "divide_by" in figure:
        values = [value / result_values(document, figure["divide_by"])[0] for value in values]
    return [value * figure.get("scale", 1) for value in values]


def as_quoted(value: float, quoted: str) -> str:
    """``value`` written as ``quoted`` writes its number: the same decimals (half rounded up, as a
    person rounds the number the file shows), thousands separators if it has them."""
    rounded = Decimal(str(round(value, 12))).quantize(Decimal(1).scaleb(-len(quoted.partition(".")[2])), ROUND_HALF_UP)
    return f"{rounded:,}" if "," in quoted else f"{rounded}"


def figure_mismatch(figure: dict[str, str]) -> str | None:
    """Why ``figure`` is not what its page quotes from its result file, or None if it is."""
    text = (REPO / figure["doc"]).read_text(encoding="utf-8")
    if "row" in figure:
        text = "\n".join(line for line in text.splitlines() if figure["row"] in line)
    quoted = figure["quoted"]
    if not re.search(rf"(?<![\d.,]){re.escape(quoted)}(?!\d|[.,]\d)", text):
        where = f" on the line of {figure['row']!r}" if "row" in figure else ""
        return f"{figure['doc']} no longer quotes {quoted}{where} ({figure['file']} {figure['path']})"
    values = figure_values(figure)
    low, dash, high = quoted.partition("-")
    if dash:
        written = f"{as_quoted(min(values), low)}-{as_quoted(max(values), high)}"
    else:
        written = as_quoted(values[0], quoted) if len(values) == 1 else f"{len(values)} values"
    if written != quoted:
        return f"{figure['doc']} quotes {quoted}, {figure['file']} {figure['path']} reads {written}"
    return None


def test_quoted_figures_are_those_of_the_latest_results():
    figures = quoted_figures()
    assert figures, "bench/figures.toml lists no figure"
    mismatches = [why for figure in figures if (why := figure_mismatch(figure))]
    assert not mismatches, mismatches


def test_a_changed_figure_or_result_fails_the_comparison(tmp_path):
    figure = next(f for f in quoted_figures() if f["path"] == "sites.python.ratio_cpu_per_page")
    assert figure_mismatch(figure) is None
    assert figure_mismatch({**figure, "quoted": "0.253"}) is not None
    result = json.loads((REPO / figure["file"]).read_text(encoding="utf-8"))
    result["sites"]["python"]["ratio_cpu_per_page"] = 0.261
    (tmp_path / "result.json").write_text(json.dumps(result), encoding="utf-8")
    assert "reads 0.261" in figure_mismatch({**figure, "file": str(tmp_path / "result.json")})


def not_measured() -> dict[str, set[str]]:
    """Per page, the decimals that are no measurement (bench/figures.toml's ``not_measured``)."""
    with FIGURES.open("rb") as handle:
        entries = tomllib.load(handle)["not_measured"]
    allowed: dict[str, set[str]] = {}
    for entry in entries:
        assert entry["why"].strip(), f"{entry['doc']}: say why {entry['quoted']} is no measurement"
        if "settings" in entry:
            assert {str(defaults()[name]) for name in entry["settings"]} == set(entry["quoted"]), entry
        allowed.setdefault(entry["doc"], set()).update(entry["quoted"])
    return allowed


# docs/settings.md is written from the settings spec: every figure in it is a default.
FIGURE_PAGES = ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in DOCS.glob("*.md") if p.name != "settings.md")]


def unlisted_decimals(page: str, text: str) -> list[str]:
    """The decimals ``text`` (the page ``page``) quotes that bench/figures.toml neither ties to a
    result nor lists as no measurement."""
    listed = {end for f in quoted_figures() if f["doc"] == page for end in (f["quoted"], *f["quoted"].split("-"))}
    listed |= not_measured().get(page, set())
    return sorted(set(DECIMAL.findall(text)) - listed)


@pytest.mark.parametrize("page", FIGURE_PAGES)
def test_every_decimal_figure_of_a_page_comes_from_a_result_file(page):
    text = (REPO / page).read_text(encoding="utf-8")
    if page in ("README.md", "docs/performance.md"):
        assert DECIMAL.findall(text), f"{page} quotes no figure (update this test if that is intended)"
    unlisted = unlisted_decimals(page, text)
    assert not unlisted, f"{page} figures not tied to a result in bench/figures.toml: {unlisted}"


def test_an_unlisted_decimal_fails():
    assert unlisted_decimals("docs/index.md", "A re-crawl takes 0.123 of the first crawl's time.") == ["0.123"]


# --------------------------------------------------------------------------
# The site builds strictly
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The site built once for the module: the strict build's test checks it, the crawl serves it."""
    site = tmp_path_factory.mktemp("docs-crawl") / "site"
    return site, build_site(site)


def test_site_builds_strict_with_every_nav_page(built_site):
    site, built = built_site
    output = built.stdout + built.stderr
    assert built.returncode == 0, output
    assert "WARNING" not in output, output
    for source in nav_pages():
        assert (site / page_path(source) / "index.html").is_file(), source


def test_nav_titles_are_the_page_headings():
    """Material titles a page with its nav entry: when that is its H1, a crawler gets a clean title."""
    differ = {source: (title, h1(source)) for source, title in nav_pages().items() if title != h1(source)}
    assert not differ, f"nav title != H1: {differ}"


def test_settings_reference_is_in_the_site():
    assert "settings.md" in nav_pages()
    assert "<!-- Written by `python -m harvester.config.reference`" in (DOCS / "settings.md").read_text(encoding="utf-8")


# --------------------------------------------------------------------------
# Harvester crawls its own documentation
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def crawled_docs(built_site):
    """The built site served on loopback and crawled once by the ``site`` spider, embedded into a
    local Qdrant with the real model."""
    site, built = built_site
    work = site.parent
    assert built.returncode == 0, built.stdout + built.stderr
    with SiteServer(root=site) as server:
        result = crawl("site", server.url, work, timeout=600)
    assert result.returncode == 0, result.output[-4000:]
    pages = {urlsplit(item["url"]).path.lstrip("/"): item for item in result.items}
    return work, pages, result


@pytest.mark.e2e
def test_every_page_is_stored_once_with_its_title(crawled_docs):
    _, pages, result = crawled_docs
    sources = {page_path(p.relative_to(DOCS).as_posix()): p.relative_to(DOCS).as_posix()
               for p in DOCS.rglob("*.md")}
    assert len(pages) == len(result.items), "a page was stored twice"
    strays = sorted(set(pages) - set(sources))
    assert not strays, f"stored pages that are no docs page: {strays}"
    missing = sorted(page_path(source) for source in nav_pages() if page_path(source) not in pages)
    assert not missing, f"docs pages not stored: {missing}; skipped: {result.stat('skipped')}"
    for path, item in pages.items():
        assert item["title"] == h1(sources[path]), f"/{path}: title {item['title']!r}"
        assert item["chunks"], f"/{path} has no chunks"
        assert item["page_type"] == "content"
    assert result.stat("pages_failed") == 0


@pytest.mark.e2e
def test_settings_reference_tables_come_through_whole(crawled_docs):
    _, pages, _ = crawled_docs
    markdown = pages["settings/"]["markdown"]
    rows = [line for line in (DOCS / "settings.md").read_text(encoding="utf-8").splitlines() if line.startswith("| `")]
    assert len(rows) > 50
    missing = [row for row in rows if row not in markdown]
    assert not missing, f"settings rows changed or lost: {missing[:5]}"
    assert ("| `HARVESTER_MAX_PAGES` | `0` | integer, at least 0 | stop after this many pages (0 = no limit; "
            "also `-a max_pages=`) |") in markdown


@pytest.mark.e2e
def test_code_blocks_are_fenced_exactly(crawled_docs):
    _, pages, _ = crawled_docs
    checked = 0
    for source in nav_pages():
        markdown = pages[page_path(source)]["markdown"]
        for lang, code in FENCE.findall((DOCS / source).read_text(encoding="utf-8")):
            assert f"```{lang}\n{code}\n```" in markdown, f"{source}: {lang} block changed:\n{code}"
            checked += 1
    assert checked >= 20
    assert f"```shell\n{TWO_COMMANDS[0]}\n```" in pages["quickstart/"]["markdown"]


@pytest.mark.e2e
def test_no_material_chrome_in_the_pages(crawled_docs):
    work, pages, _ = crawled_docs
    html = unescape((work / "site" / "quickstart" / "index.html").read_text(encoding="utf-8"))
    stale = [s for s in MATERIAL_CHROME if s not in html]
    assert not stale, f"not Material's chrome any more (fix the list): {stale}"
    sources = {page_path(source): (DOCS / source).read_text(encoding="utf-8") for source in nav_pages()}
    leaks = {path: found for path, item in pages.items()
             if (found := [s for s in MATERIAL_CHROME if s in item["markdown"] and s not in sources.get(path, "")])}
    assert not leaks, f"Material chrome in the Markdown: {leaks}"
    # The sidebar, the header and the footer's previous/next links would add links the page's
    # source does not have.
    for source in nav_pages():
        own = {page_path(source)}
        linked = {page_path(target) for target in SOURCE_LINK.findall((DOCS / source).read_text(encoding="utf-8"))}
        item = pages[page_path(source)]
        in_page = {urlsplit(url).path.lstrip("/") for url in re.findall(r"\]\((http://127\.0\.0\.1:\d+/[^)\s]*)\)",
                                                                        item["markdown"])}
        extra = in_page - linked - own
        assert not extra, f"{source}: links its source does not have (navigation chrome?): {sorted(extra)}"


# Questions a user would ask, and the page that answers each.
QUESTIONS = [
    ("How do I let the crawler reach an internal wiki on a private address?", "safety/"),
    ("Does crawling the same site again embed unchanged pages again?", "recrawl/"),
    ("Where do I put per-site settings in a TOML file?", "profiles/"),
    ("What does exit status 2 mean?", "reports/"),
    ("How is a PDF turned into a page?", "extraction/"),
]


@pytest.mark.e2e
def test_scrapy_search_finds_the_page(crawled_docs):
    """The real command, as a user runs it after the crawl."""
    work, _, _ = crawled_docs
    query, page = QUESTIONS[0]
    process = run_scrapy(["search", "--json", "-k", "3", query], work, timeout=300)
    assert process.returncode == 0, process.stderr[-3000:]
    hits = json.loads(process.stdout)
    assert urlsplit(hits[0]["url"]).path.lstrip("/") == page, [(h["url"], h["heading_path"]) for h in hits]


@pytest.mark.e2e
def test_search_finds_the_page_for_each_question(crawled_docs):
    """The same search in-process (one model load for all the questions), with the query encoder
    ``scrapy search`` loads under the default settings."""
    from scrapy.settings import Settings

    from harvester.embedding.query import load_query_embedder
    from harvester.index.engines import open_store
    from harvester.index.search import search

    work, _, _ = crawled_docs
    embedder = load_query_embedder(Settings(defaults()))
    client = open_store(None, None, str(work / "qdrant"))
    try:
        wrong = {}
        for query, page in QUESTIONS:
            hits = search(client, defaults()["HARVESTER_QDRANT_COLLECTION"], embedder, query, 3)
            if urlsplit(hits[0]["url"]).path.lstrip("/") != page:
                wrong[query] = [(h["url"], h["heading_path"]) for h in hits]
    finally:
        client.close()
    assert not wrong, wrong
