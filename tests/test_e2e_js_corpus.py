"""A real documentation site served as JavaScript-only shells, crawled in the default render mode.

The public scorer's own server (``../shared/eval/serve.py --js-only``) empties every page's body
and writes it back from an inline script, so plain HTTP sees a title and nothing else, and every
link is only in the rendered page. ``auto`` must render the pages, learn that the host needs the
browser, follow the links the browser shows, and extract as well as from the plain site.
"""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import missing_prerequisite, score_feed, truth_pages
from tests.crawl import NO_EMBEDDING, crawl
from tests.test_e2e_render import stats

pytestmark = pytest.mark.e2e

# The plain-site floors of tests/test_e2e_corpora.py, on the rendered pages.
FLOORS = {"recall_med": 0.98, "precision_med": 0.98, "code": 0.99, "headings": 0.98}


def test_a_javascript_only_docs_site_is_rendered_and_extracted_as_well_as_the_plain_one(tmp_path, eval_sites):
    if shutil.which("chromium") is None:
        missing_prerequisite("Debian's chromium is not installed (scripts/bootstrap.sh --test)")
    corpus = "requests"
    truth = truth_pages(corpus)
    url = eval_sites(corpus, "--js-only")
    # Two at a time, so most pages are requested after the host has learned it needs the
    # browser (with more, the index page's links would all be fetched over HTTP at once).
    result = crawl("site", url, tmp_path, settings={**NO_EMBEDDING, "CONCURRENT_REQUESTS": "2"})
    assert result.returncode == 0, result.output[-3000:]
    pages = [item for item in result.items if item.get("markdown")]
    # Every page was a shell over HTTP: the links it holds only exist once rendered.
    assert len(pages) >= len(truth) - 1, [p["url"] for p in pages]
    assert all(page["rendered"] and page["page_type"] == "content" for page in pages)
    render = stats(result.output, "harvester/render/")
    assert render["harvester/render/learned_hosts"] == 1, render
    assert render["harvester/render/learned_direct"] >= len(truth) // 2, render
    # Before it learned, each page was fetched over HTTP, found a shell and rendered once.
    assert render["harvester/render/fallback/app_shell"] + render["harvester/render/learned_direct"] >= len(pages)
    figures = score_feed(corpus, tmp_path / "pages.jsonl")
    measured = {
        "recall_med": figures["content"]["recall_med"], "precision_med": figures["content"]["precision_med"],
        "code": figures["code"]["fidelity"], "headings": figures["headings"]["fidelity"],
    }
    for name, floor in FLOORS.items():
        assert measured[name] >= floor, (name, figures["summary"])
