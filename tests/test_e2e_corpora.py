"""Extraction fidelity on the three public corpora, crawled for real and judged by the public scorer."""

from __future__ import annotations

import pytest

from tests.conftest import score_feed, truth_pages

pytestmark = pytest.mark.e2e

# The floors of the extraction issue; orphan pages (no link reaches them) are not counted.
FLOORS = {"recall_med": 0.98, "recall_p10": 0.93, "precision_med": 0.98, "code": 0.99, "headings": 0.98,
          "tables": 0.95}
MAX_LEAKAGE = 0.01


@pytest.mark.parametrize("corpus", ["flask", "requests", "scrapy"])
def test_fidelity_floors_hold(corpus, corpus_crawl):
    truth_pages(corpus)
    figures = score_feed(corpus, corpus_crawl(corpus, "site"))
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
