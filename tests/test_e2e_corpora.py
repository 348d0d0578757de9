"""Extraction fidelity on the three public corpora, crawled for real and judged by the public scorer."""

from __future__ import annotations

import pytest

from tests.conftest import score_feed, truth_pages
from tests.crawl import NO_EMBEDDING, crawl

pytestmark = pytest.mark.e2e

# The floors of the extraction issue; orphan pages (no link reaches them) are not counted.
FLOORS = {"recall_med": 0.98, "recall_p10": 0.93, "precision_med": 0.98, "code": 0.99, "headings": 0.98,
          "tables": 0.95}
MAX_LEAKAGE = 0.01


@pytest.mark.parametrize("corpus", ["flask", "requests", "scrapy"])
def test_fidelity_floors_hold(corpus, tmp_path, doc_sites):
    truth_pages(corpus)
    server = doc_sites(corpus)
    result = crawl("site", server.url, tmp_path, settings=NO_EMBEDDING)
    assert result.returncode == 0, result.output[-3000:]
    figures = score_feed(corpus, tmp_path / "pages.jsonl")
    measured = {
        "recall_med": figures["content"]["recall_med"], "recall_p10": figures["content"]["recall_p10"],
        "precision_med": figures["content"]["precision_med"], "code": figures["code"]["fidelity"],
        "headings": figures["headings"]["fidelity"], "tables": figures["tables"]["fidelity"],
    }
    for name, floor in FLOORS.items():
        if measured[name] is not None:  # requests has no data table
            assert measured[name] >= floor, (name, figures["summary"])
    assert figures["leakage"] is not None and figures["leakage"] <= MAX_LEAKAGE, figures["summary"]
    assert figures["coverage_reachable"] >= 0.98, figures["summary"]
