"""End to end against the project's own scorer: Debian's Flask docs crawled, each page's structure
(title, headings, code blocks, tables) checked against the committed truth (tests/structure.py).

Needs only the Debian package, not ../shared/eval: this is the extraction gate a clean clone runs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import doc_root, missing_prerequisite
from tests.structure import build_truth, load_truth, package_version, score

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

# Coverage and titles: one page is linked from nowhere (patterns/jquery.html), so the docs spider
# cannot reach it. Every table must stay (there are only four).
FLOORS = {"coverage": 0.98, "titles": 0.98, "headings": 0.99, "code": 0.99, "tables": 1.0}
FENCED_BLOCK = re.compile(r"^```[^\n]*\n.*?^```$\n?", re.M | re.S)
PIPE_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}.*$", re.M)


def flask_truth() -> dict[str, dict[str, Any]]:
    """The committed truth's pages, if the installed package is the one it was read from."""
    truth = load_truth("flask")
    installed = package_version("flask")
    if installed != truth["package_version"]:
        missing_prerequisite(f"python-flask-doc {truth['package_version']} is needed "
                             f"(installed: {installed}); or rebuild: python -m tests.structure flask")
    pages: dict[str, dict[str, Any]] = truth["pages"]
    return pages


@pytest.fixture(scope="module")
def flask_feed(corpus_crawl: Any) -> Path:
    feed: Path = corpus_crawl("flask", "docs")
    return feed


def rewrite_feed(feed: Path, out: Path, change: Any) -> Path:
    """``feed`` with every item's Markdown passed through ``change``."""
    items = [json.loads(line) for line in feed.read_text(encoding="utf-8").splitlines()]
    out.write_text("".join(json.dumps({**item, "markdown": change(item["markdown"])}) + "\n" for item in items),
                   encoding="utf-8")
    return out


def test_the_committed_truth_is_what_the_installed_docs_hold() -> None:
    assert build_truth(doc_root("flask")) == flask_truth(), "rebuild it: python -m tests.structure flask"


def test_the_truth_has_enough_of_each_structure_to_judge() -> None:
    pages = flask_truth().values()
    assert len(pages) >= 70
    assert sum(len(page["headings"]) for page in pages) >= 400
    assert sum(len(page["code"]) for page in pages) >= 500
    assert sum(len(page["tables"]) for page in pages) >= 4


def test_every_page_keeps_its_title_headings_code_blocks_and_tables(flask_feed: Path) -> None:
    figures = score(flask_truth(), flask_feed)
    below = {kind: figures[kind] for kind, floor in FLOORS.items() if figures[kind] < floor}
    assert not below, (below, figures["missing"])


@pytest.mark.parametrize(
    ("kind", "change"),
    [("code", lambda markdown: FENCED_BLOCK.sub("", markdown, count=1)),
     ("tables", lambda markdown: PIPE_TABLE_RULE.sub("", markdown)),
     ("headings", lambda markdown: re.sub(r"^#{2,6} ", "", markdown, flags=re.M))],
)
def test_the_scorer_fails_a_feed_that_lost_structure(flask_feed: Path, tmp_path: Path, kind: str,
                                                        change: Any) -> None:
    """The floors above would catch extraction dropping a code block per page, tables or headings."""
    figures = score(flask_truth(), rewrite_feed(flask_feed, tmp_path / "damaged.jsonl", change))
    assert figures[kind] < FLOORS[kind], figures["counts"][kind]
