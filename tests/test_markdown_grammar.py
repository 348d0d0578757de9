"""One Markdown grammar for every reader: extraction's tidying and quality score, frames' heading
levels and chunking agree on where code is."""

from __future__ import annotations

from types import SimpleNamespace

from harvester.chunking.chunker import chunk_markdown, whitespace_counter
from harvester.extract.converters.conventions import tidy_markdown
from harvester.extract.metadata import markdown_headings
from harvester.markdown.grammar import Line, classify_lines, fence_opening, heading, is_table_start
from harvester.meta import DONT_EXTRACT, PROBE, ROBOTS_TXT, is_page_request, is_reported_request
from harvester.render.frames import demote_headings

LIST_FENCE = """# Install

1. Run:

   ```bash
   pip   install   harvester   


   harvester --help
   ```

2. Done.
"""


def test_a_fence_in_a_list_item_is_code_for_every_reader() -> None:
    kinds = [kind for _, kind in classify_lines(LIST_FENCE.split("\n"))]
    assert kinds.count(Line.FENCE) == 2 and Line.CODE in kinds
    # Tidying keeps code exactly: trailing spaces and the two blank lines stay.
    assert "   pip   install   harvester   \n\n\n   harvester --help" in tidy_markdown(LIST_FENCE)
    # Chunking keeps the block whole, fences balanced, even with a budget that forces splits.
    chunks = chunk_markdown(LIST_FENCE, whitespace_counter, max_tokens=20)
    holding = [c.text for c in chunks if "pip   install" in c.text]
    assert holding and all(text.count("```") % 2 == 0 for text in holding)
    assert "harvester --help" in holding[0]


def test_fences_open_and_close_by_the_same_rules() -> None:
    assert fence_opening("- ```python").marker == "```"
    assert fence_opening("> ~~~~").marker == "~~~~"
    assert fence_opening("```inline` code") is None  # a backtick info string holds no backtick
    lines = ["```", "# not a heading", "~~~", "```", "# Heading"]
    assert [kind for _, kind in classify_lines(lines)] == [Line.FENCE, Line.CODE, Line.CODE, Line.FENCE, Line.TEXT]


def test_headings_keep_a_trailing_hash_that_is_part_of_the_text() -> None:
    assert heading("# C#") == (1, "C#")
    assert heading("## Title ##") == (2, "Title")
    assert heading("#hashtag") is None and heading("#") is None
    assert markdown_headings("# C#\n\n```\n# comment\n```\n## F#  ##\n") == [
        {"level": 1, "text": "C#"}, {"level": 2, "text": "F#"}]
    assert demote_headings("# A\n  ## B\n```\n# c\n```", 2) == "### A\n#### B\n```\n# c\n```"


def test_tables_start_with_a_delimiter_row() -> None:
    assert is_table_start(["| a | b |", "|---|:-:|", "| 1 | 2 |"], 0)
    assert not is_table_start(["| a | b |", "| 1 | 2 |"], 0)


def test_page_requests_are_told_apart_in_one_place() -> None:
    def request(**meta: object) -> SimpleNamespace:
        return SimpleNamespace(meta=meta)

    assert is_page_request(request()) and is_reported_request(request())
    for key in (DONT_EXTRACT, PROBE, ROBOTS_TXT):
        assert not is_page_request(request(**{key: True}))
    assert is_reported_request(request(**{DONT_EXTRACT: True}))  # a failed sitemap is reported
    assert not is_reported_request(request(**{PROBE: True}))
