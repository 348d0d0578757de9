"""Learned site templates (harvester.extract.template), Scrapy-free: what is learned, what goes,
and what must stay although it repeats; then, with Scrapy's objects but no crawl, which pages the
extraction middleware learns from."""

from __future__ import annotations

import random
import re

import pytest

from harvester.extract.page import extract_page, parse_html, template_scope
from harvester.extract.template import (
    TemplateLearner,
    learn,
    page_blocks,
    remove_template,
    signature,
)
from tests.servers import template_site as site

BASE = "http://docs.example"


def extract_site(pages: dict[str, str], order: list[str] | None = None, *, sample: int = 8,
                 learning: bool = True) -> dict[str, str]:
    """Every page's Markdown, the pages arriving in ``order``, learned as the middleware does: the
    first ``sample`` pages decide the template, which then cleans every page."""
    learner = TemplateLearner(sample)
    parsed = {}
    for path in order or list(pages):
        doc = parse_html(pages[path])
        blocks = page_blocks(template_scope(doc))
        parsed[path] = (doc, blocks)
        if learner.template("host") is None:
            learner.observe("host", path, signature(blocks))
    template = learner.decide("host")
    out = {}
    for path, (doc, blocks) in parsed.items():
        strip = (lambda root, b=blocks: remove_template(b, template)) if learning else None
        out[path] = extract_page(pages[path], BASE + path, doc=doc, template=strip).markdown
    return out


def words(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def learned() -> dict[str, str]:
    return extract_site(site.pages())


def test_without_learning_the_chrome_inside_main_leaks():
    # The control: no profile knows this site, and its pager (a class no rule names), breadcrumb and
    # notice sit in <main>.
    md = extract_site(site.pages(), learning=False)
    assert all("licensed under CC BY 4.0" in page for page in md.values())
    assert any("→" in page for page in md.values())


def test_learned_template_removes_the_chrome_of_every_page(learned):
    for path, md in learned.items():
        leaks = [s for s in site.CHROME if s in md]
        assert not leaks, f"{path}: {leaks}\n{md}"


def test_first_and_last_pages_lose_their_own_variant_of_the_pager(learned):
    # The first page has no "previous" link and the last no "next": their bars differ from the
    # rest, and go by their place in the template.
    first, last = learned[site.path(0)], learned[site.path(len(site.TITLES) - 1)]
    assert "Installing Acme →" not in first and "← Troubleshooting" not in last


@pytest.mark.parametrize("i", range(len(site.TITLES)))
def test_every_page_keeps_its_own_content(learned, i):
    md = words(learned[site.path(i)])
    assert md.startswith(f"# {site.TITLES[i]} ")
    assert f"widgets of kind {i} behave when a board loads them" in md
    assert f"Widgets of kind {i} are checked again whenever page {i} of a board changes." in md
    # Repeated on every page, but a label inside the content: it stays.
    assert "## Options **Parameters:** - `size" in md
    # "See also" heads a list of this page's own links: heading and links stay.
    assert "## See also -" in md and md.count("](http://docs.example/") >= 2


def test_the_same_code_example_on_two_pages_is_content(learned):
    fence = "```python\n" + site.SHARED_CODE + "\n```"
    assert [i for i in range(len(site.TITLES)) if fence in learned[site.path(i)]] == [2, 3]


def test_the_same_note_on_two_pages_is_content(learned):
    note = words(site.SHARED_NOTE)
    assert [i for i in range(len(site.TITLES)) if note in words(learned[site.path(i)])] == [4, 5]


def test_a_table_stays(learned):
    assert "| staging | acme deploy -s |" in learned[site.path(6)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_order_of_arrival_does_not_matter(learned, seed):
    order = list(site.pages())
    random.Random(seed).shuffle(order)
    assert extract_site(site.pages(), order) == learned


def test_a_small_site_is_learned_from_all_its_pages():
    pages = site.pages(4)
    md = extract_site(pages, sample=8)
    for path, text in md.items():
        assert "licensed under CC BY 4.0" not in text and "Acme Widgets Docs" not in text, path


def test_nothing_is_learned_from_two_pages():
    pages = dict(list(site.pages().items())[:2])
    assert extract_site(pages) == extract_site(pages, learning=False)


def test_a_block_on_fewer_than_most_pages_is_not_template():
    # A long paragraph on 5 of 12 pages (42%): content, wherever it sits.
    pages = site.pages()
    notice = "<p>This release of the widget toolkit changed how boards are saved; read the upgrade notes.</p>"
    changed = {p: html.replace("<h2>Options</h2>", notice + "<h2>Options</h2>") if i < 5 else html
               for i, (p, html) in enumerate(pages.items())}
    md = extract_site(changed)
    assert sum("read the upgrade notes" in text for text in md.values()) == 5


def test_a_long_notice_on_most_pages_goes_wherever_it_sits():
    # The same support notice pasted into the middle of 10 of 12 pages is boilerplate.
    pages = site.pages()
    notice = "<p>Support for version 1 of the toolkit ends in June; plan your upgrade to version 2 now.</p>"
    changed = {p: html.replace("<h2>Options</h2>", notice + "<h2>Options</h2>") if i < 10 else html
               for i, (p, html) in enumerate(pages.items())}
    md = extract_site(changed)
    assert not any("plan your upgrade" in text for text in md.values())
    assert all("## Options" in text for text in md.values())


def test_code_and_tables_in_the_content_are_never_removed_alone():
    # The same code block on every page, right before the pager: repeated, at the content's edge,
    # still code.
    pages = site.pages()
    code = '<pre><code class="language-shell">pip install acme-widgets</code></pre>'
    changed = {p: html.replace('<p class="flip">', code + '<p class="flip">') for p, html in pages.items()}
    md = extract_site(changed)
    assert all("```shell\npip install acme-widgets\n```" in text for text in md.values())


def test_learning_needs_three_pages_and_most_of_them():
    blocks = [page_blocks(parse_html(html)) for html in site.pages(3).values()]
    assert not learn([signature(b) for b in blocks[:2]])
    template = learn([signature(b) for b in blocks])
    assert template.pages == 3 and template.texts


def test_removal_reports_what_it_removed():
    pages = list(site.pages().values())
    blocks = [page_blocks(parse_html(html)) for html in pages]
    template = learn([signature(b) for b in blocks])
    removal = remove_template(blocks[5], template)
    assert removal and removal.blocks >= 5 and removal.chars > 100
    assert not remove_template(blocks[5], None)


def test_a_learner_decides_once_and_counts_a_url_once():
    learner = TemplateLearner(3)
    sigs = [signature(page_blocks(parse_html(html))) for html in site.pages(4).values()]
    assert not learner.observe("h", "/a", sigs[0])
    assert not learner.observe("h", "/a", sigs[0])  # the browser's copy of the same page
    assert not learner.observe("h", "/b", sigs[1])
    assert learner.template("h") is None and learner.learning() == ["h"]
    assert learner.observe("h", "/c", sigs[2])
    assert learner.template("h") and learner.learning() == []
    assert not learner.observe("h", "/d", sigs[3])  # frozen
    learner.settle("h", removed=False)  # removed nothing from the sample: not applied any more
    assert not learner.template("h") and learner.template("h") is not None


def test_copies_of_one_page_arriving_first_count_once():
    """A docs site's landing page in seven versions, laid out unlike its other pages, reaches the
    learner first (a root listing the versions): the copies count as one page, so the template is
    the one the other pages share, and their chrome goes."""
    pages = site.pages()
    landing = pages.pop("/").replace('<div class="wrap">', '<div class="landing"><div class="wrap">', 1)
    copies = {f"/{version}/": landing.replace("<main", f"<p>Release {version}.</p><main", 1)
              for version in ("1.0", "1.1", "1.2", "2.0", "2.1", "2.2", "3.0")}
    md = extract_site({**copies, **pages}, order=[*copies, *pages])
    for path in pages:
        assert "licensed under CC BY 4.0" not in md[path] and "Built by Acme" not in md[path], path
        assert TITLE_WORDS[path] in words(md[path]), path


TITLE_WORDS = {site.path(i): f"{title} explains how widgets" for i, title in enumerate(site.TITLES)}


def test_page_blocks_survive_deep_nesting_and_odd_nodes():
    # As deep as lxml's parser keeps (256 levels): no recursion in the walk.
    html = "<html><body>" + "<div><span>" * 120 + "deep" + "</span></div>" * 120 + "<!-- c --><?pi x?></body></html>"
    blocks = page_blocks(parse_html(html))
    assert [b.chars for b in blocks if b.chars] == [4]


def test_sphinx_custom_theme_header_is_one_region():
    # The fixture theme of tests/fixtures/generated: its header bar goes as a whole.
    from tests.test_generated_sites import GENERATED

    root = GENERATED / "site" / "sphinx-custom"
    pages = {f"/{p}.html": (root / f"{p}.html").read_text(encoding="utf-8")
             for p in ("index", "install", "usage", "reference")}
    md = extract_site(pages)
    for text in md.values():
        assert not re.search(r"Table of contents|« previous|Last update|Built with a custom theme", text), text


# --------------------------------------------------------------------------
# The extraction middleware's side (Scrapy objects, no crawl)
# --------------------------------------------------------------------------

def _middleware(**settings):
    from scrapy.utils.test import get_crawler

    from harvester.addon import HarvesterAddon
    from harvester.extract.middleware import ExtractionMiddleware

    return ExtractionMiddleware(get_crawler(settings_dict={"ADDONS": {HarvesterAddon: 0}, **settings}))


def _responder(pages: dict[str, str]):
    from scrapy.http import HtmlResponse, Request

    def response(path: str) -> HtmlResponse:
        return HtmlResponse(BASE + path, body=pages[path].encode(), encoding="utf-8", request=Request(BASE + path))
    return response


def test_a_page_prepared_after_the_template_was_decided_is_not_walked_for_learning_yet_cleaned():
    # Pages queue behind a long page in the extraction worker, each sent to be prepared while
    # the template was still learning; by the time one is prepared the sample may be full.
    from harvester.urls.hosts import host_key

    middleware = _middleware()
    pages = site.pages()
    paths = list(pages)
    response = _responder(pages)
    host = host_key(BASE + "/")
    learning = middleware._hold.prepare(response(paths[-1]))
    assert learning.blocks and learning.signature is not None  # still learning: walked
    for path in paths[:middleware._hold.learner.sample]:
        middleware._hold.learner.observe(host, path, middleware._hold.prepare(response(path)).signature)
    template = middleware._hold.learner.template(host)
    assert template

    late = middleware._hold.prepare(response(paths[-1]))
    assert late.doc is not None and late.signals is not None
    assert late.blocks is None and late.signature is None  # nothing left to learn from it
    _, page, _, _, removal, _ = middleware._extractor.classify_and_extract(late.response, False, template, late)
    _, reference, _, _, _, _ = middleware._extractor.classify_and_extract(response(paths[-1]), False, template, None)
    assert removal.blocks and page.markdown == reference.markdown
    assert "licensed under CC BY 4.0" not in page.markdown


def test_a_page_too_long_to_learn_from_waits_for_the_template_of_the_others_and_is_cleaned():
    import asyncio

    from harvester.extract.template import SAMPLE_MAX_BYTES

    middleware = _middleware(HARVESTER_TEMPLATE_SAMPLE=3)
    pages = site.pages()
    first, long_page, *others = list(pages)
    entry = "<p>" + "A long changelog entry about widgets and boards. " * 40 + "</p>\n"
    pages[long_page] = pages[long_page].replace(
        "<h2>See also</h2>", entry * (SAMPLE_MAX_BYTES // len(entry) + 1) + "<h2>See also</h2>")
    response = _responder(pages)
    host = "docs.example"

    async def crawl() -> dict[str, str]:
        stored = {}
        for path in [first, long_page, others[0]]:
            assert await middleware._extract(response(path)) == []  # all wait for the template
        assert middleware._hold.learner.template(host) is None  # two pages learned from, not three
        for output in await middleware._extract(response(others[1])):
            stored[output.url] = output.markdown
        return stored

    stored = asyncio.run(crawl())
    assert middleware.crawler.stats.get_value("harvester/template/too_long_to_learn") == 1
    assert middleware._hold.learner.template(host)
    assert sorted(stored) == sorted(BASE + path for path in (first, long_page, *others[:2]))
    assert len(stored[BASE + long_page]) > SAMPLE_MAX_BYTES // 2
    for markdown in stored.values():
        assert not [s for s in site.CHROME if s in markdown]
