"""Aggregate decisions that lose no text, and the measure of it (Scrapy-free)."""

from __future__ import annotations

from harvester.chunking.chunker import chunk_markdown, whitespace_counter
from harvester.chunking.context import context_line
from harvester.dedup.aggregate import AggregateDetector, passage_key, passages, sampled_shingles
from harvester.dedup.coverage import point_text, text_kept
from tests.test_aggregate import CHAPTERS, prose


def add(detector: AggregateDetector, url: str, markdown: str) -> list[str]:
    return detector.add(url, sampled_shingles(markdown), [passage_key(p) for p in passages(markdown)])


def test_pages_of_shared_paragraphs_with_one_of_their_own_are_not_aggregates() -> None:
    bank = [prose(200 + n, 60) for n in range(12)]
    pages = {f"/p{n}.html": "\n\n".join([*(bank[(n * 3 + k * 5) % 12] for k in range(4)), prose(300 + n, 40)])
             for n in range(10)}
    detector = AggregateDetector(0.95)
    for url, markdown in pages.items():
        add(detector, url, markdown)
    assert detector.aggregates == set()


def test_a_page_made_of_other_pages_paragraphs_is_an_aggregate_whatever_their_order() -> None:
    paragraphs = [prose(400 + n, 80) for n in range(8)]
    detector = AggregateDetector(0.95)
    for n in range(4):
        add(detector, f"/p{n}.html", "\n\n".join(paragraphs[2 * n:2 * n + 2]))
    assert add(detector, "/all.html", "\n\n".join(reversed(paragraphs))) == ["/all.html"]


def test_an_aggregate_keeps_its_own_passages() -> None:
    own = prose(77, 40)
    detector = AggregateDetector(0.95)
    for url, text in CHAPTERS.items():
        add(detector, url, text)
    whole = "\n\n".join([*CHAPTERS.values(), own])
    assert add(detector, "/print.html", whole) == ["/print.html"]
    assert detector.own_passages("/print.html", passages(whole)) == [own]


def test_a_page_that_stands_for_copies_is_never_an_aggregate() -> None:
    detector = AggregateDetector(0.95)
    whole = "\n\n".join(CHAPTERS.values())
    add(detector, "/print.html", whole)
    detector.exempt("/print.html")
    for url, text in CHAPTERS.items():
        add(detector, url, text)
    assert detector.aggregates == set()


def test_holders_are_the_kept_pages_with_its_text_most_first() -> None:
    detector = AggregateDetector(0.95)
    for url, text in CHAPTERS.items():
        add(detector, url, text)
    add(detector, "/print.html", "\n\n".join(CHAPTERS.values()))
    assert set(detector.holders("/print.html")) == set(CHAPTERS)
    assert detector.holders("/unknown.html") == []


def test_text_kept_counts_the_sentences_no_stored_text_holds() -> None:
    first, second = prose(1, 60), prose(2, 60)
    kept = text_kept({"/a": f"{first}\n\n{second}", "/b": first, "/short": "Too short."}, [first])
    assert kept["/b"] == 1.0
    assert 0.3 < kept["/a"] < 0.7
    assert "/short" not in kept


def test_text_kept_holds_a_line_a_chunk_boundary_cuts_without_overlap() -> None:
    # A line too long for one chunk is cut at whitespace; each piece is stored under its section heading.
    line = " ".join(f"'SETTING_{n}': None," for n in range(60))
    words = line.split(" ")
    short = "as well as the [`url_for()`](/api#url_for) and [`get_flashed_messages()`](/api#flash) functions."
    page = f"# API\n\n{line}\n\n## Templates\n\n{short}"
    stored = ["# API\n\n" + " ".join(words[:37]), "# API\n\n" + " ".join(words[37:]),
              "## Templates\n\nas well as the [`url_for()`](/api#url_for) and",
              "## Templates\n\n[`get_flashed_messages()`](/api#flash) functions."]
    assert text_kept({"/api": page}, stored) == {"/api": 1.0}


def test_text_kept_counts_words_lost_at_a_chunk_boundary() -> None:
    line = " ".join(f"'SETTING_{n}': None," for n in range(60))
    words = line.split(" ")
    stored = [" ".join(words[:37]), " ".join(words[39:])]  # two words at the cut are in neither
    assert text_kept({"/api": line}, stored) == {"/api": 0.0}
    assert text_kept({"/api": line}, [" ".join(words[:37]), " ".join(words[37:100]),
                                      " ".join(words[101:])]) == {"/api": 0.0}


def test_text_kept_reads_a_heading_without_text_of_its_own_in_the_context_line() -> None:
    # The chunker gives an empty section no chunk: its heading is only in its subsections' context.
    page = f"# Release notes\n\n## Scrapy 0.22.0 (released 2014-01-17)\n\n### Fixes\n\n{prose(5, 60)}"
    payloads = [{"page_content": chunk.text, "metadata": {"context": context_line("Release notes", chunk.heading_path)}}
                for chunk in chunk_markdown(page, whitespace_counter, max_tokens=200)]
    assert text_kept({"/news": page}, [point_text(p) for p in payloads]) == {"/news": 1.0}
    assert text_kept({"/news": page}, [p["page_content"] for p in payloads])["/news"] < 1.0


def test_text_kept_holds_a_code_line_cut_into_re_fenced_pieces() -> None:
    line = " ".join(f'<td><input type="text" name="field_{n}" id="id_field_{n}"></td>' for n in range(40))
    page = f"# Forms\n\n```python\n>>> f.as_table()\n{line}\n```"
    chunks = chunk_markdown(page, whitespace_counter, max_tokens=50)
    assert len(chunks) > 2 and all("```python\n" in chunk.text for chunk in chunks)
    assert text_kept({"/forms": page}, [chunk.text for chunk in chunks]) == {"/forms": 1.0}
