"""Extraction fidelity on real generator output.

``tests/fixtures/generated/site/<name>/`` holds the same four-page "Widget Toolkit" manual rendered
by Sphinx (alabaster, furo, the other built-in themes and ``harvester_custom``, a theme written
for these tests that puts its navigation inside the element marked ``role="main"``), MkDocs
(Material and its two built-in themes), VitePress and Docusaurus, built from
``tests/fixtures/generated/src/`` by ``tests/fixtures/generated/build.py`` and committed, so these
tests need none of the generators. No extraction profile names the built-in or custom themes.

Pages are extracted as a crawl extracts them: the site's template is learned from its pages
(``harvester.extract.template``) and removed. Every expectation is derived from the *source* files
(the reST / Markdown the author wrote), never from the generated HTML: code blocks must come back
byte-exact as fenced blocks with their language, headings at their source level, the options
table as a GFM pipe table, admonitions as labelled blockquotes, links to the pages the source
links to, and none of the theme's chrome. The theme sites are also scored against the bodies the
generators render without a theme (``tests/fidelity.py``): the fidelity floors of the public
corpora hold on every one, with leakage <= 1%, with their generator recognised or not.
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from functools import cache
from html import unescape
from itertools import pairwise
from pathlib import Path

import pytest

import harvester.extract.page as page_module
from harvester.extract.page import ExtractedPage, extract_page, parse_html, template_scope
from harvester.extract.template import TemplateLearner, page_blocks, remove_template, signature
from tests import fidelity
from tests.crawl import NO_EMBEDDING, crawl
from tests.servers.sitesrv import SiteServer

GENERATED = Path(__file__).resolve().parent / "fixtures" / "generated"
BASE = "http://127.0.0.1:8000/"
PAGES = ("index", "install", "usage", "reference")


# --------------------------------------------------------------------------
# The sites
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Site:
    name: str
    src: Path                  # folder with <page>.rst / <page>.md
    syntax: str                # "rst" | "md"
    chrome: tuple[str, ...]    # theme strings that must never reach the Markdown
    dir_urls: bool = False     # Docusaurus: /install/index.html served as /install/
    reference: str | None = None  # reference/<generator>/: bodies rendered without a theme

    @property
    def root(self) -> Path:
        return GENERATED / "site" / self.name

    def html_file(self, page: str) -> Path:
        if page == "index":
            return self.root / "index.html"
        return self.root / (f"{page}/index.html" if self.dir_urls else f"{page}.html")

    def url(self, page: str) -> str:
        if page == "index":
            return BASE
        return BASE + (f"{page}/" if self.dir_urls else f"{page}.html")

    def source_file(self, page: str) -> Path:
        return self.src / f"{page}.{self.syntax}"


SPHINX_CHROME = ("¶", "Navigation", "Related Topics", "Documentation overview", "Previous:", "Next:",
                 "Quick search", "Powered by", "Alabaster", "©2024")
SITES = [
    Site("sphinx-alabaster", GENERATED / "src" / "sphinx", "rst", SPHINX_CHROME, reference="sphinx"),
    Site("sphinx-furo", GENERATED / "src" / "sphinx", "rst",
         ("¶", "Skip to content", "Back to top", "Next", "Previous", "On this page", "Made with",
          "Furo", "pradyunsg", "Copyright © 2024", "Widget Toolkit 1.0 documentation"), reference="sphinx"),
    Site("mkdocs-material", GENERATED / "src" / "mkdocs" / "docs", "md",
         ("¶", "Skip to content", "Table of contents", "Back to top", "Previous", "Next", "Made with",
          "Material for MkDocs", "Edit this page", "GitHub"), reference="mkdocs"),
    Site("vitepress", GENERATED / "src" / "vitepress" / "docs", "md",
         ("Skip to content", "Main Navigation", "Sidebar Navigation", "Appearance", "Menu",
          "Return to top", "On this page", "Edit this page", "Pager", "Previous page", "Next page",
          "Released under the MIT License", "Copyright 2024 Harvester tests")),
    Site("docusaurus", GENERATED / "src" / "docusaurus" / "docs", "md",
         ("Skip to main content", "On this page", "Edit this page", "Previous", "Next", "GitHub",
          "Community", "Issue tracker", "Built with Docusaurus", "Copyright 2024 Harvester tests"),
         dir_urls=True),
]
SPHINX_SRC, MKDOCS_SRC = GENERATED / "src" / "sphinx", GENERATED / "src" / "mkdocs" / "docs"
_BASIC_CHROME = ("¶", "Table of Contents", "Previous topic", "Next topic", "Quick search", "Created using",
                 "Navigation")
THEME_SITES = [
    *(Site(f"sphinx-{theme}", SPHINX_SRC, "rst", _BASIC_CHROME, reference="sphinx")
      for theme in ("classic", "nature", "pyramid", "bizstyle", "sphinxdoc", "traditional")),
    Site("sphinx-agogo", SPHINX_SRC, "rst", ("¶", "Table of Contents", "Created using"), reference="sphinx"),
    Site("sphinx-haiku", SPHINX_SRC, "rst", ("¶", "Created using"), reference="sphinx"),
    Site("sphinx-scrolls", SPHINX_SRC, "rst", ("¶", "Table of Contents", "Created using"), reference="sphinx"),
    Site("sphinx-custom", SPHINX_SRC, "rst", ("¶", "Table of contents", "« previous", "next »", "Last update",
                                              "Modules", "Built with a custom theme", "maintained by"),
         reference="sphinx"),
    Site("mkdocs-mkdocs", MKDOCS_SRC, "md", ("¶", "Keyboard Shortcuts", "Documentation built with",
                                             "Edit on GitHub", "Previous", "Next", "GitHub"), reference="mkdocs"),
    Site("mkdocs-readthedocs", MKDOCS_SRC, "md", ("¶", "Edit on GitHub", "Read the Docs", "Built with",
                                                  "Previous", "GitHub"), reference="mkdocs"),
]
SITES = [site for site in [*SITES, *THEME_SITES] if site.src.is_dir()]
SITE_IDS = [site.name for site in SITES]
SITE_PAGES = [pytest.param(site, page, id=f"{site.name}-{page}") for site in SITES for page in PAGES]
CODE_LANGUAGES = ("python", "shell")
EDIT_URL = "github.com/example/widget-toolkit"
_M = re.MULTILINE
_MS = re.MULTILINE | re.DOTALL


# --------------------------------------------------------------------------
# What the author wrote (parsed from the sources)
# --------------------------------------------------------------------------

@dataclass
class Source:
    title: str = ""
    headings: list[tuple[int, str]] = field(default_factory=list)
    code: list[tuple[str, str]] = field(default_factory=list)            # (language, exact text)
    table: list[list[str]] = field(default_factory=list)                 # header row first, unescaped
    admonitions: list[tuple[str, str]] = field(default_factory=list)     # (kind, body text)
    bullets: list[str] = field(default_factory=list)                     # as Markdown
    links: list[tuple[str | None, str]] = field(default_factory=list)    # (text or None, page)


_RST_LEVELS = {"=": 1, "-": 2, "~": 3}


def _rst_block(text: str, start: int) -> str:
    """The indented body that follows a directive line (ending at `start`)."""
    lines = []
    for line in text[start:].split("\n"):
        if line.strip() and not line.startswith("   "):
            break
        lines.append(line)
    return textwrap.dedent("\n".join(lines)).strip("\n")


def _rst_inline(text: str) -> str:
    return re.sub(r"``(.+?)``", r"`\1`", text)


def parse_rst(text: str) -> Source:
    src = Source()
    lines = text.split("\n")
    for above, line in pairwise(lines):
        if line and line[0] in _RST_LEVELS and set(line) == {line[0]} and above.strip() \
                and len(line) >= len(above.strip()):
            src.headings.append((_RST_LEVELS[line[0]], above.strip()))
    for m in re.finditer(r"^\.\. code-block:: (\w+)\n", text, _M):
        src.code.append((m.group(1), _rst_block(text, m.end())))
    for m in re.finditer(r"^\.\. list-table::\n", text, _M):
        body = _rst_block(text, m.end())
        for line in body.split("\n"):
            if line.startswith("* - "):
                src.table.append([line[4:].strip()])
            elif line.startswith("  - "):
                src.table[-1].append(line[4:].strip())
    for m in re.finditer(r"^\.\. (note|warning)::\n", text, _M):
        src.admonitions.append((m.group(1), " ".join(_rst_block(text, m.end()).split())))
    src.bullets = [_rst_inline(m.group(1)) for m in re.finditer(r"^\* (.+)$", text, _M)]
    for m in re.finditer(r":doc:`([^`<]+?)(?: <(\w+)>)?`", text):
        text_, target = (m.group(1).strip(), m.group(2)) if m.group(2) else (None, m.group(1))
        src.links.append((text_, target))
    for m in re.finditer(r"^\.\. toctree::\n", text, _M):
        for entry in _rst_block(text, m.end()).split("\n"):
            if entry.strip() and not entry.startswith(":"):
                src.links.append((None, entry.strip()))
    src.title = src.headings[0][1]
    return src


def parse_md(text: str) -> Source:
    src = Source()
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.DOTALL)  # front matter
    fences = list(re.finditer(r"^```(\w+)\n(.*?)\n```$", text, _MS))
    src.code = [(m.group(1), m.group(2)) for m in fences]
    prose = re.sub(r"^```.*?^```$", "", text, flags=_MS)
    src.headings = [(len(m.group(1)), m.group(2).strip())
                    for m in re.finditer(r"^(#{1,6}) (.+)$", prose, _M)]
    rows = [line for line in prose.split("\n") if line.startswith("|")]
    for row in rows:
        cells = [c.strip().replace(r"\|", "|") for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]
        if not all(re.fullmatch(r":?-{3,}:?", c) for c in cells):
            src.table.append(cells)
    for m in re.finditer(r"^!!! (\w+)\n\n    (.+)$", prose, _M):                  # MkDocs
        src.admonitions.append((m.group(1), m.group(2).strip()))
    for m in re.finditer(r"^::: ?(\w+)\n\n?(.+?)\n\n?:::$", prose, _MS):  # VitePress, Docusaurus
        src.admonitions.append((m.group(1), " ".join(m.group(2).split())))
    for m in re.finditer(r"^> \[!(\w+)\]\n((?:> .*\n)+)", prose, _M):  # GitHub alerts (VitePress)
        body = re.sub(r"^> ", "", m.group(2), flags=_M)
        src.admonitions.append((m.group(1).lower(), " ".join(body.split())))
    src.bullets = [m.group(1) for m in re.finditer(r"^\* (.+)$", prose, _M)]
    src.links = [(m.group(1), m.group(2)) for m in re.finditer(r"\[([^\]]+)\]\((\w+)\.md\)", prose)]
    src.title = src.headings[0][1]
    return src


@cache
def source(site: Site, page: str) -> Source:
    text = site.source_file(page).read_text(encoding="utf-8")
    return parse_rst(text) if site.syntax == "rst" else parse_md(text)


def learned_extraction(site: Site, order: tuple[str, ...] = PAGES) -> dict[str, ExtractedPage]:
    """Every page of ``site`` extracted as the crawl does: the pages arrive in ``order``, the
    site's template is learned from them (the whole site is smaller than the sample, so all of its
    pages) and removed from each."""
    learner = TemplateLearner()
    parsed = {}
    for page in order:
        path = site.html_file(page)
        if not path.is_file():
            pytest.fail(f"{path} is missing: run tests/fixtures/generated/build.py {site.name}")
        html = path.read_text(encoding="utf-8")
        doc = parse_html(html)
        blocks = page_blocks(template_scope(doc))
        learner.observe(site.name, page, signature(blocks))
        parsed[page] = (html, doc, blocks)
    template = learner.decide(site.name)
    return {page: extract_page(html, site.url(page), doc=doc,
                               template=lambda root, b=blocks: remove_template(b, template))
            for page, (html, doc, blocks) in parsed.items()}


@cache
def learned_site(site: Site) -> dict[str, ExtractedPage]:
    return learned_extraction(site)


def extracted(site: Site, page: str) -> ExtractedPage:
    return learned_site(site)[page]


# --------------------------------------------------------------------------
# Reading the Markdown
# --------------------------------------------------------------------------

_FENCE = re.compile(r"^(`{3,}|~{3,})")


def prose_lines(md: str) -> list[str]:
    """The Markdown's lines outside fenced code blocks."""
    out, fence = [], None
    for line in md.split("\n"):
        m = _FENCE.match(line.lstrip())
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None:
            run = m.group(1) if m else ""
            if run[:1] == fence[0] and len(run) >= len(fence) and not line.strip()[len(run):]:
                fence = None
        else:
            out.append(line)
    return out


def fenced_blocks(md: str) -> list[tuple[str, str]]:
    pattern = r"^(`{3,})([\w+#.-]*)\n(.*?)\n\1$"
    return [(m.group(2), m.group(3)) for m in re.finditer(pattern, md, _MS)]


def atx_headings(md: str) -> list[tuple[int, str]]:
    out = []
    for line in prose_lines(md):
        m = re.match(r"^(#{1,6}) (.+?)(?: #+)?$", line)
        if m:
            out.append((len(m.group(1)), m.group(2).strip()))
    return out


def table_rows(md: str) -> list[list[str]]:
    return [[c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            for line in prose_lines(md) if line.strip().startswith("|") and line.strip().endswith("|")]


def blockquotes(md: str) -> list[list[str]]:
    """Each blockquote as its lines without the leading '> '."""
    quotes, current = [], None
    for line in prose_lines(md):
        if line.startswith(">"):
            if current is None:
                current = []
                quotes.append(current)
            current.append(line[1:].removeprefix(" "))
        else:
            current = None
    return quotes


def page_of(url: str, site: Site, base: str = BASE) -> str | None:
    """The fixture page a URL points at (None: outside the site)."""
    if not url.startswith(base):
        return None
    path = url[len(base):].split("#", maxsplit=1)[0].split("?", maxsplit=1)[0]
    path = path.removesuffix(".html").removesuffix("index").rstrip("/")
    return path or "index"


def md_links(md: str) -> list[tuple[str, str]]:
    return re.findall(r"(?<!!)\[((?:\\.|[^\]\\])*)\]\(([^)\s]+)(?: \"[^\"]*\")?\)", md)


def flat(md: str) -> str:
    return " ".join(md.split())


# --------------------------------------------------------------------------
# Extraction fidelity
# --------------------------------------------------------------------------

def test_every_site_was_built():
    assert {s.name for s in SITES} >= {"sphinx-alabaster", "sphinx-furo", "mkdocs-material"}
    for site in SITES:
        for page in PAGES:
            assert site.html_file(page).is_file(), f"run tests/fixtures/generated/build.py {site.name}"


@pytest.mark.parametrize(("site", "page"), SITE_PAGES)
def test_extraction_uses_the_generator_main_element(site, page):
    result = extracted(site, page)
    assert not result.degraded
    assert result.quality >= 0.5, result.quality


@pytest.mark.parametrize(("site", "page"), SITE_PAGES)
def test_code_blocks_are_exact_fences_with_their_language(site, page):
    md = extracted(site, page).markdown
    expected = source(site, page).code
    for lang, code in expected:
        fence = f"```{lang}\n{code}\n```"
        assert f"\n{fence}\n" in f"\n{md}\n", \
            f"{lang} block not kept byte-exact:\n{fence}\n--- got ---\n{md}"
    assert fenced_blocks(md) == expected, "extra, missing or reordered code blocks"


@pytest.mark.parametrize(("site", "page"), SITE_PAGES)
def test_no_code_block_label_outside_the_fence(site, page):
    # VitePress prints the language ("python") in a <span class="lang"> above the code; Docusaurus
    # and Material have copy buttons. None of it is content.
    md = extracted(site, page).markdown
    labels = (*CODE_LANGUAGES, "copy", "copy code")
    strays = [line for line in prose_lines(md) if line.strip().lower() in labels]
    assert not strays, f"code block chrome leaked as text: {strays}\n{md}"


@pytest.mark.parametrize(("site", "page"), SITE_PAGES)
def test_headings_are_atx_at_their_source_level(site, page):
    result = extracted(site, page)
    expected = source(site, page).headings
    assert atx_headings(result.markdown) == expected, result.markdown
    assert [(h["level"], h["text"]) for h in result.headings] == expected


@pytest.mark.parametrize(("site", "page"), SITE_PAGES)
def test_title_is_the_page_heading(site, page):
    title = extracted(site, page).title
    heading = source(site, page).title
    if page == "index":
        # Root pages are often titled by the site name alone ("Widget Toolkit 1.0 documentation").
        assert title.startswith(heading), title
    else:
        assert title == heading, f"{title!r} != {heading!r}"


@pytest.mark.parametrize("site", SITES, ids=SITE_IDS)
def test_table_is_a_gfm_pipe_table_with_every_cell(site):
    expected = source(site, "usage").table
    assert expected and any("|" in cell for row in expected for cell in row), "the source lost its table"
    escaped = [[cell.replace("|", r"\|") for cell in row] for row in expected]
    md = extracted(site, "usage").markdown
    rows = table_rows(md)
    assert rows, f"no pipe table in:\n{md}"
    header, delimiter, *body = rows
    assert header == escaped[0], md
    assert all(re.fullmatch(r":?-{3,}:?", cell) for cell in delimiter) and len(delimiter) == len(header), md
    assert body == escaped[1:], md
    assert r"(a \| b)" in md


@pytest.mark.parametrize(("site", "page"), [p for p in SITE_PAGES if p.values[1] in ("install", "usage")])
def test_admonitions_are_labelled_blockquotes(site, page):
    md = extracted(site, page).markdown
    expected = source(site, page).admonitions
    assert expected, "the source lost its admonition"
    quotes = blockquotes(md)
    for kind, body in expected:
        matching = [q for q in quotes if body in flat("\n".join(q))]
        assert matching, f"the {kind} is not a blockquote:\n{md}"
        first = next(line for line in matching[0] if line.strip())
        assert re.match(rf"\*\*{kind}:?\*\*", first, re.IGNORECASE), \
            f"the blockquote does not start with **{kind.title()}**:\n{md}"
    # The label must not also stand alone outside the quote.
    labels = {kind.lower() for kind, _ in expected}
    outside = [line for line in prose_lines(md) if not line.startswith(">")
               and line.strip().strip("*:").lower() in labels]
    assert not outside, f"admonition label outside the blockquote: {outside}\n{md}"


@pytest.mark.parametrize(("site", "page"), SITE_PAGES)
def test_bullet_lists_survive(site, page):
    md = extracted(site, page).markdown
    lines = prose_lines(md)
    for item in source(site, page).bullets:
        assert f"- {item}" in lines, f"bullet {item!r} missing:\n{md}"


@pytest.mark.parametrize(("site", "page"), SITE_PAGES)
def test_links_are_the_source_links_only(site, page):
    md = extracted(site, page).markdown
    src = source(site, page)
    links = md_links(md)
    outside = [url for _, url in links if page_of(url, site) is None]
    assert not outside, f"links leaving the site (edit/GitHub chrome?): {outside}"
    assert {page_of(url, site) for _, url in links} == {target for _, target in src.links}, \
        f"linked pages differ from the source's (sidebar or pager leaked?):\n{md}"
    for text, target in src.links:
        if text is None:
            continue
        assert any(t == text and page_of(url, site) == target for t, url in links), \
            f"link [{text}] -> {target} missing:\n{md}"


@pytest.mark.parametrize("site", SITES, ids=SITE_IDS)
def test_literal_asterisks_and_underscores_are_escaped(site):
    index = flat(extracted(site, "index").markdown)
    assert r"Options marked with a \* are optional" in index
    assert r"written in snake\_case, such as max\_widgets or board\_path." in index
    usage = flat(extracted(site, "usage").markdown)
    for code in ("`**kwargs`", "`_before_render`", "`*.widget`"):
        assert code in usage, f"inline code {code} changed:\n{usage}"


@pytest.mark.parametrize("site", SITES, ids=SITE_IDS)
def test_no_theme_chrome_leaks(site):
    html = unescape("\n".join(site.html_file(page).read_text(encoding="utf-8") for page in PAGES))
    absent = [s for s in site.chrome if s not in html]
    assert not absent, f"chrome strings not in {site.name}'s HTML (fix the list): {absent}"
    leaks = {}
    for page in PAGES:
        md = extracted(site, page).markdown
        found = [s for s in site.chrome if re.search(rf"(?<!\w){re.escape(s)}(?!\w)", md)]
        if EDIT_URL in md:
            found.append(EDIT_URL)
        if found:
            leaks[page] = found
    assert not leaks, f"theme chrome in the Markdown: {leaks}"


# --------------------------------------------------------------------------
# Theme sites against the theme-free reference: the fidelity floors
# --------------------------------------------------------------------------

# The floors of the public corpora (tests/test_e2e_corpora.py).
FLOORS = {"recall_med": 0.98, "recall_p10": 0.93, "precision_med": 0.98, "code": 0.99, "headings": 0.98,
          "tables": 0.95}
MAX_LEAKAGE = 0.01
REFERENCED = [site for site in SITES if site.reference]


def site_figures(site: Site, pages: dict[str, ExtractedPage]) -> dict:
    refs = fidelity.load_refs(GENERATED / "reference" / site.reference)
    html = {page: site.html_file(page).read_text(encoding="utf-8") for page in refs}
    return fidelity.score_site({page: result.markdown for page, result in pages.items()}, html, refs)


def assert_floors(figures: dict) -> None:
    for name, floor in FLOORS.items():
        assert figures[name] is not None and figures[name] >= floor, (name, figures)
    assert figures["leakage"] <= MAX_LEAKAGE, figures["leaks"]


def test_every_theme_site_has_its_reference():
    assert {s.name for s in REFERENCED} >= {f"sphinx-{t}" for t in (
        "alabaster", "classic", "nature", "agogo", "haiku", "pyramid", "bizstyle", "scrolls", "sphinxdoc",
        "traditional", "custom", "furo")} | {"mkdocs-mkdocs", "mkdocs-readthedocs", "mkdocs-material"}
    for site in REFERENCED:
        assert sorted(p.stem for p in (GENERATED / "reference" / site.reference).glob("*.html")) == sorted(PAGES)


@pytest.mark.parametrize("site", REFERENCED, ids=[s.name for s in REFERENCED])
def test_theme_sites_meet_the_fidelity_floors(site):
    assert_floors(site_figures(site, learned_site(site)))


@pytest.mark.parametrize("site", REFERENCED, ids=[s.name for s in REFERENCED])
def test_theme_sites_meet_the_floors_when_no_generator_is_recognised(site, monkeypatch):
    # As on a site whose generator leaves no trace: generic main elements, learning does the rest.
    monkeypatch.setattr(page_module, "detect_profile", lambda view: None)
    assert_floors(site_figures(site, learned_extraction(site)))


def test_the_custom_theme_leaks_without_learning():
    # The control: what the learned template removes is there, in the profile's main element.
    site = next(s for s in SITES if s.name == "sphinx-custom")
    pages = {page: extract_page(site.html_file(page).read_text(encoding="utf-8"), site.url(page))
             for page in PAGES}
    figures = site_figures(site, pages)
    assert figures["leakage"] == 1.0 and figures["precision_med"] < 0.9, figures


@pytest.mark.parametrize("site", SITES, ids=SITE_IDS)
def test_order_of_arrival_does_not_change_the_pages(site):
    reverse = learned_extraction(site, tuple(reversed(PAGES)))
    assert {page: r.markdown for page, r in reverse.items()} == {p: r.markdown for p, r in learned_site(site).items()}


# --------------------------------------------------------------------------
# The real crawl
# --------------------------------------------------------------------------

@pytest.mark.e2e
@pytest.mark.parametrize("site", SITES, ids=SITE_IDS)
def test_crawl_stores_every_page_once(site, tmp_path):
    with SiteServer(root=site.root) as server:
        result = crawl("docs", server.url, tmp_path, settings=NO_EMBEDDING, timeout=180)
    assert result.returncode == 0, result.output[-4000:]
    stored = sorted(page_of(item["url"], site, server.url) or item["url"] for item in result.items)
    assert stored == sorted(PAGES), f"stored {[item['url'] for item in result.items]}"
    for item in result.items:
        page = page_of(item["url"], site, server.url)
        assert item["chunks"], f"{item['url']} has no chunks"
        for lang, code in source(site, page).code:
            assert f"```{lang}\n{code}\n```" in item["markdown"], f"{item['url']}: {lang} block changed"
