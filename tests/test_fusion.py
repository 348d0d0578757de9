"""Hybrid ranking at the page level: each half ranks pages, then the page rankings are fused (with the
chunk-level fusion's page score added by default), the hybrid never loses a page that both
halves put first, and no page climbs more than one place over the better of its two half ranks.
Pure, in-process candidates."""

from __future__ import annotations

import random

import pytest

from harvester.index.search import Candidate, SearchTuning, page_ranking, rank


def chunk(key: str, score: float, page: str) -> Candidate:
    return Candidate(key, score, {"page_content": key, "metadata": {"source_url": f"http://h/{page}.html"}})


def answer_and_long_page() -> tuple[list[Candidate], list[Candidate]]:
    # The answer page matches best on each side, but in different chunks: its explanation by meaning
    # (a1), its words in another section (a2). A long page matches moderately on both sides in
    # several chunks.
    dense = [chunk("a1", 0.75, "answer"), chunk("l1", 0.58, "long"), chunk("l2", 0.57, "long"),
             chunk("l3", 0.40, "long")]
    sparse = [chunk("a2", 12.0, "answer"), chunk("l1", 8.0, "long"), chunk("l2", 7.5, "long"),
              chunk("l3", 3.0, "long")]
    return dense, sparse


def test_a_page_both_halves_rank_first_stays_first():
    dense, sparse = answer_and_long_page()
    assert page_ranking(dense)[0].id == "http://h/answer.html"
    assert page_ranking(sparse)[0].id == "http://h/answer.html"
    results = rank(dense, sparse, 5)
    assert [r["url"] for r in results] == ["http://h/answer.html", "http://h/long.html"]
    assert results[0]["matches"] == 2 and results[1]["matches"] == 3
    # Page level alone: cosine of the answer page's best dense chunk plus its full BM25 share.
    pages = rank(dense, sparse, 5, SearchTuning(level="page"))
    assert [r["url"] for r in pages] == ["http://h/answer.html", "http://h/long.html"]
    assert pages[0]["score"] == pytest.approx(0.75 + 0.4 * 1.0, abs=1e-4)
    # Fusing chunks first lets the long page's chunks found by both halves climb over it.
    chunk_level = rank(dense, sparse, 5, SearchTuning(level="chunk"))
    assert chunk_level[0]["url"] == "http://h/long.html"


def test_the_result_text_is_the_pages_best_fused_chunk():
    dense, sparse = answer_and_long_page()
    answer = rank(dense, sparse, 1)[0]
    assert answer["text"] == "a1"  # 0.75 by cosine, against 0.4 for a2 by BM25 alone
    long = rank(dense, sparse, 2)[1]
    assert long["text"] == "l1"


def random_sides(rng: random.Random) -> tuple[list[Candidate], list[Candidate]]:
    pages = [f"p{i}" for i in range(rng.randint(2, 6))]
    chunks = [(f"c{i}", rng.choice(pages)) for i in range(rng.randint(3, 20))]
    dense = sorted((chunk(key, rng.uniform(0.1, 0.8), page) for key, page in rng.sample(chunks, rng.randint(1, len(chunks)))),
                   key=lambda c: -c.score)
    sparse = sorted((chunk(key, rng.uniform(0.5, 20.0), page) for key, page in rng.sample(chunks, rng.randint(1, len(chunks)))),
                    key=lambda c: -c.score)
    return dense, sparse


@pytest.mark.parametrize("tuning", [SearchTuning(), SearchTuning(level="page"), SearchTuning(fusion="minmax"),
                                    SearchTuning(fusion="rrf"), SearchTuning(page_weight=0.0),
                                    SearchTuning(sparse_weight=1.5, page_chunks=2, level="page")])
def test_fusion_never_demotes_a_page_both_halves_put_first(tuning):
    rng = random.Random(38)
    agreed = 0
    for _ in range(300):
        dense, sparse = random_sides(rng)
        first = page_ranking(dense, tuning)[0]
        if first.id != page_ranking(sparse, tuning)[0].id:
            continue
        agreed += 1
        assert rank(dense, sparse, 3, tuning)[0]["url"] == first.id
    assert agreed > 50


def test_one_half_alone_ranks_pages_as_before():
    dense, _ = answer_and_long_page()
    for tuning in (SearchTuning(), SearchTuning(level="page"), SearchTuning(level="chunk")):
        assert [r["url"] for r in rank(dense, [], 5, tuning)] == ["http://h/answer.html", "http://h/long.html"]


def test_a_page_climbs_no_more_than_one_place_over_its_better_half():
    # The long page is third on each half, but the chunk both halves find lifts its fused score over
    # the page the dense half ranks first and the page the sparse half ranks first.
    dense = [chunk("a1", 0.60, "answer"), chunk("m1", 0.58, "mid"), chunk("l1", 0.57, "long")]
    sparse = [chunk("s1", 10.0, "other"), chunk("n1", 9.5, "near"), chunk("l1", 9.0, "long")]
    results = rank(dense, sparse, 4)
    assert results[1]["score"] > results[0]["score"]  # the fused score alone would put "long" first
    assert [r["url"] for r in results] == ["http://h/answer.html", "http://h/long.html",
                                           "http://h/mid.html", "http://h/other.html"]

