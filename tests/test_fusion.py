"""Hybrid ranking at the page level: each half ranks pages, then the page rankings are fused (with the
chunk-level fusion's page score added by default), the hybrid never loses a page that both
halves put first, and no page climbs more than one place over the better of its two half ranks;
change notes yield to the page after them unless the query asks what changed, and lists of links
unless the query names them. Pure, in-process candidates."""

from __future__ import annotations

import random

import pytest

from harvester.index.search import (
    RANK_KEYS,
    Candidate,
    SearchTuning,
    complete,
    link_list,
    names_code,
    page_ranking,
    rank,
)


def chunk(key: str, score: float, page: str, headings: tuple[str, ...] = (), total: int | None = None,
          text: str | None = None, versions: tuple[str, ...] = ()) -> Candidate:
    metadata = {"source_url": f"http://h/{page}.html", "headings": list(headings)}
    if total:
        metadata["total_chunks"] = total
    if versions:
        metadata["domain"], metadata["versions"] = "h", list(versions)
    return Candidate(key, score, {"page_content": text or key, "metadata": metadata})


def in_mode(mode: str, dense: list[Candidate], sparse: list[Candidate]) -> tuple[list[Candidate], list[Candidate]]:
    """The candidates a search in ``mode`` has: one half's are empty in ``dense`` or ``sparse`` mode."""
    return (dense if mode != "sparse" else []), (sparse if mode != "dense" else [])


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
    # Page level alone, each half from nothing: cosine of the answer page's best dense chunk plus
    # its full BM25 share.
    pages = rank(dense, sparse, 5, SearchTuning(level="page", baseline=0.0))
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


def weaker(cosine: float = 0.25, bm25: float = 2.0, count: int = 8) -> tuple[list[Candidate], list[Candidate]]:
    """The rest of each half's candidates: pages that match the query only a little (a search fuses
    each half's first 20)."""
    return ([chunk(f"wd{i}", cosine, f"weak-dense-{i}") for i in range(count)],
            [chunk(f"ws{i}", bm25, f"weak-sparse-{i}") for i in range(count)])


def test_one_passage_both_halves_find_outweighs_two_each_half_finds_apart():
    # The explanation matches the question by meaning in one chunk and by words in another; the
    # answer's one passage is second on each half. BM25 ranks a third page first, so neither page
    # is both halves' first.
    weak_dense, weak_sparse = weaker()
    dense = [chunk("x1", 0.64, "explanation"), chunk("a1", 0.50, "answer"), chunk("c1", 0.40, "other"), *weak_dense]
    sparse = [chunk("c2", 10.0, "other"), chunk("x2", 9.5, "explanation"), chunk("a1", 9.0, "answer"), *weak_sparse]
    assert rank(dense, sparse, 3)[0]["url"] == "http://h/answer.html"
    assert rank(dense, sparse, 3, SearchTuning(chunk_weight=1.0))[0]["url"] == "http://h/explanation.html"


def test_each_half_is_measured_from_its_weakest_candidate():
    # The model ranks the topic page second; BM25 does not return it (the question is in other
    # words). Pages both halves find moderately sum past it when what a half did not return counts
    # as nothing; it scored below that half's weakest candidate, not nothing.
    weak_dense, weak_sparse = weaker(0.40, 40.0)
    dense = [chunk("r1", 0.63, "reference"), chunk("t1", 0.59, "topic"), chunk("o1", 0.55, "optimization"),
             chunk("e1", 0.54, "expressions"), chunk("b1", 0.45, "backends"), chunk("s1", 0.45, "raw-sql"), *weak_dense]
    sparse = [chunk("o2", 59.0, "optimization"), chunk("r2", 57.0, "reference"), chunk("c2", 55.0, "conditional"),
              chunk("s2", 47.0, "raw-sql"), chunk("l2", 46.5, "logging"), chunk("e2", 44.0, "expressions"),
              chunk("b2", 43.8, "backends"), *weak_sparse]
    def place(tuning: SearchTuning) -> int:
        return [r["url"] for r in rank(dense, sparse, 7, tuning)].index("http://h/topic.html") + 1
    assert place(SearchTuning(baseline=0.0)) == 6
    assert place(SearchTuning()) == 4
    # One half alone ranks as it does without the other: the baseline only weighs one half
    # against the other.
    for mode in ("dense", "sparse"):
        alone = in_mode(mode, dense, sparse)
        assert rank(*alone, 7) == rank(*alone, 7, SearchTuning(baseline=0.0))


def reference_and_tutorial() -> tuple[list[Candidate], list[Candidate]]:
    # A 120-chunk reference page has the best chunk by meaning, a 4-chunk tutorial the best by
    # words; each half ranks the other page second, each in another chunk of the reference.
    dense = [chunk("r1", 0.64, "reference", total=120), chunk("t1", 0.60, "tutorial", total=4),
             chunk("o1", 0.40, "other", total=10)]
    sparse = [chunk("t2", 10.0, "tutorial", total=4), chunk("r2", 9.5, "reference", total=120),
              chunk("o1", 5.0, "other", total=10)]
    return dense, sparse


def test_a_long_pages_best_chunk_is_weaker_evidence_than_a_short_pages():
    dense, sparse = reference_and_tutorial()
    prose = "why do templates live in a folder named after the app"
    assert [r["url"] for r in rank(dense, sparse, 3, query=prose)] == [
        "http://h/tutorial.html", "http://h/reference.html", "http://h/other.html"]
    without = rank(dense, sparse, 3, SearchTuning(length_prior=0.0), query=prose)
    assert without[0]["url"] == "http://h/reference.html"
    # A query naming an identifier asks for its entry, which long reference pages hold.
    assert rank(dense, sparse, 3, query="what does resp.ok check")[0]["url"] == "http://h/reference.html"
    # --dense and --sparse stay each half's own ranking.
    assert rank(dense, [], 3, query=prose)[0]["url"] == "http://h/reference.html"
    assert rank([], sparse, 3, query=prose)[0]["url"] == "http://h/tutorial.html"


@pytest.mark.parametrize(("query", "names"), [
    ("is resp.ok the same as status_code == 200", True), ("what does url_for() return", True),
    ("set settings.DEBUG in production", True), ("the MAX_CONTENT_LENGTH limit", True),
    ("e.g. a form with two fields", False), ("what changed in Django 4.2", False),
    ("my .flaskenv file is ignored", False), ("why is request a global in Flask?", False),
])
def test_a_query_names_code_by_a_dotted_snake_case_or_called_name(query, names):
    assert names_code(query) is names


def changelog_first() -> tuple[list[Candidate], list[Candidate]]:
    # The changelog's entry names the feature in the query's words; the page that explains it
    # matches a little less on each half.
    changes = ("Changes", "Version 2.0.1")
    guide = ("Configuration", "Dotenv files")
    dense = [chunk("c1", 0.66, "changes", changes), chunk("g1", 0.64, "config", guide), chunk("o1", 0.5, "other")]
    sparse = [chunk("c1", 14.0, "changes", changes), chunk("g1", 12.0, "config", guide), chunk("o1", 6.0, "other")]
    return dense, sparse


@pytest.mark.parametrize("mode", ["hybrid", "dense", "sparse"])
def test_a_changelog_yields_to_the_next_page_unless_the_query_asks_what_changed(mode):
    dense, sparse = in_mode(mode, *changelog_first())
    asked = "the variables in my .flaskenv file are ignored"
    assert [r["url"] for r in rank(dense, sparse, 3, query=asked)] == [
        "http://h/config.html", "http://h/changes.html", "http://h/other.html"]
    assert rank(dense, sparse, 1, query=asked)[0]["url"] == "http://h/config.html"  # whatever k is
    for changed in ("what changed about .flaskenv files in 2.0", "is loading .flaskenv new", "deprecated dotenv",
                    "what's new with dotenv files", "dotenv loading changed in Flask", "after upgrading .flaskenv is ignored"):
        assert rank(dense, sparse, 3, query=changed)[0]["url"] == "http://h/changes.html"
    # A how-to in words of change asks how, not what changed.
    for how in ("change the .flaskenv file that gets loaded", "load new variables from .flaskenv",
                "remove a variable from .flaskenv"):
        assert rank(dense, sparse, 3, query=how)[0]["url"] == "http://h/config.html"
    kept = rank(dense, sparse, 3, SearchTuning(change_notes_yield=False), query=asked)
    assert kept[0]["url"] == "http://h/changes.html"


def test_release_notes_are_a_series_of_pages_each_titled_with_its_version():
    dense = [chunk("r1", 0.70, "releases/3.2", ("Django 3.2 release notes", "Customizing auto-created keys")),
             chunk("r2", 0.69, "releases/1.5", ("Django 1.5 release notes", "Configurable User model")),
             chunk("a1", 0.68, "ref/applications", ("Applications", "AppConfig.default_auto_field")),
             chunk("m1", 0.60, "ref/models", ("Models", "Automatic primary key fields"))]
    urls = [r["url"] for r in rank(dense, [], 4, query="AppConfig.default_auto_field")]
    assert urls == ["http://h/ref/applications.html", "http://h/releases/3.2.html", "http://h/releases/1.5.html",
                    "http://h/ref/models.html"]
    # One page whose top heading names a version (a docs home) is not release notes.
    home = [chunk("h1", 0.72, "index", ("Scrapy 2.8 documentation", "Basic concepts")),
            chunk("s1", 0.60, "spiders", ("Spiders",))]
    assert [r["url"] for r in rank(home, [], 2, query="basic concepts")] == ["http://h/index.html", "http://h/spiders.html"]
    # Nor are numbered sections (Sphinx's numbered tables of contents).
    numbered = [chunk("t1", 0.72, "tutorial", ("3. An Informal Introduction", "3.1.2. Strings")),
                chunk("s1", 0.60, "stdtypes", ("Built-in Types", "Text Sequence Type"))]
    assert rank(numbered, [], 2, query="slicing a string")[0]["url"] == "http://h/tutorial.html"
    # Nor amounts in a news story's headings.
    story = [chunk("n1", 0.72, "news/prices", ("Prices in November", "Inflation rises to 3.2%")),
             chunk("n2", 0.60, "news/rates", ("Rates", "The bank holds rates"))]
    assert rank(story, [], 2, query="inflation in November")[0]["url"] == "http://h/news/prices.html"


TABLE_OF_CONTENTS = """## User's Guide

- [Testing Flask Applications](http://h/testing.html)
  - [The Client](http://h/testing.html#the-client)
  - [`test_client()`](http://h/api.html#flask.Flask.test_client)
1. [Tutorial](http://h/tutorial/index.html)"""


def test_a_list_of_links_is_told_from_prose_and_from_a_described_list():
    assert link_list(TABLE_OF_CONTENTS)
    assert link_list("Contents:\n\n" + TABLE_OF_CONTENTS)  # one line of words among many links
    prose = "Use the [test client](http://h/t.html) to send requests.\n\n- [Testing](http://h/t.html)\n- Fixtures"
    assert not link_list(prose)
    described = "\n".join(f"- [{name}](http://h/{name}.html): how to {name} an app" for name in ("test", "deploy", "log"))
    assert not link_list(described)
    assert not link_list("- [Testing](http://h/t.html)\n- [Tutorial](http://h/u.html)")  # two links: too few to tell


def contents_first() -> tuple[list[Candidate], list[Candidate]]:
    # The site's home lists the testing pages by name; the testing guide explains, a little lower.
    home = ("Welcome to Flask", "User's Guide")
    guide = ("Testing Flask Applications", "The Client")
    dense = [chunk("i1", 0.70, "index", home, text=TABLE_OF_CONTENTS), chunk("t1", 0.68, "testing", guide)]
    sparse = [chunk("i1", 15.0, "index", home, text=TABLE_OF_CONTENTS), chunk("t1", 13.0, "testing", guide)]
    return dense, sparse


@pytest.mark.parametrize("mode", ["hybrid", "dense", "sparse"])
def test_a_list_of_links_yields_to_the_next_page_unless_the_query_names_it(mode):
    dense, sparse = in_mode(mode, *contents_first())
    asked = "testing flask applications"
    assert [r["url"] for r in rank(dense, sparse, 2, query=asked)] == ["http://h/testing.html", "http://h/index.html"]
    assert rank(dense, sparse, 1, query=asked)[0]["url"] == "http://h/testing.html"  # whatever k is
    # Every word of the query in the list's headings: the user asks for the list.
    assert rank(dense, sparse, 2, query="user's guide")[0]["url"] == "http://h/index.html"
    kept = rank(dense, sparse, 2, SearchTuning(link_lists_yield=False), query=asked)
    assert kept[0]["url"] == "http://h/index.html"


def rich_sides(rng: random.Random) -> tuple[list[Candidate], list[Candidate]]:
    """Many pages, some of them change notes or lists of links, of various lengths."""
    pages = [f"p{i}" for i in range(rng.randint(2, 30))]
    kinds = {page: rng.choice([{}, {"headings": ("Changes", "Version 2.0")}, {"text": TABLE_OF_CONTENTS},
                               {"headings": ("User's Guide",), "text": TABLE_OF_CONTENTS}, {"versions": ("1.0",)}])
             for page in pages}
    made = []
    for i in range(rng.randint(3, 60)):
        page = rng.choice(pages)
        made.append((f"c{i}", page, {"total": rng.randint(1, 40), **kinds[page]}))

    def side(low: float, high: float) -> list[Candidate]:
        picked = rng.sample(made, rng.randint(1, len(made)))
        return sorted((chunk(key, rng.uniform(low, high), page, **kind) for key, page, kind in picked),
                      key=lambda c: -c.score)
    return side(0.1, 0.8), side(0.5, 20.0)


def ranking_keys_only(side: list[Candidate]) -> list[Candidate]:
    """``side`` as a store that remembers ``RANK_KEYS`` gives it: those keys, no text."""
    def kept(payload: dict) -> dict:
        metadata = {key.split(".", 1)[1]: payload["metadata"][key.split(".", 1)[1]] for key in RANK_KEYS
                    if key.split(".", 1)[1] in payload["metadata"]}
        return {"metadata": metadata}
    return [Candidate(c.id, c.score, kept(c.payload)) for c in side]


class WholePayloads:
    """A store's ``retrieve`` over the candidates' whole payloads, recording what it is asked."""

    def __init__(self, *sides: list[Candidate]) -> None:
        self.whole = {c.id: c.payload for side in sides for c in side}
        self.asked: list[str] = []

    def retrieve(self, collection: str, ids, exclude_keys=()) -> dict:  # type: ignore[no-untyped-def]
        self.asked += ids
        return {key: self.whole[key] for key in ids if key in self.whole}


@pytest.mark.parametrize("tuning", [SearchTuning(), SearchTuning(depth=4), SearchTuning(depth=4, level="chunk"),
                                    SearchTuning(depth=6, level="page", length_prior=0.0)])
def test_results_from_ranking_keys_and_the_shown_chunks_read_whole_are_the_same(tuning):
    rng = random.Random(17)
    read = candidates = 0
    for _ in range(40):
        dense, sparse = rich_sides(rng)
        for k in (1, 3, 10):
            for group_by in ("page", None):
                for query in ("how do I test an app", "what changed in 2.0", "user's guide", "url_for() arguments"):
                    expected = rank(dense, sparse, k, tuning, group_by=group_by, query=query)
                    store = WholePayloads(dense, sparse)
                    slim = complete(store, "c", ranking_keys_only(dense), ranking_keys_only(sparse), k, tuning, group_by)
                    assert rank(*slim, k, tuning, group_by=group_by, query=query) == expected
                    if group_by == "page":
                        read += len(store.asked)
                        candidates += len({c.id for c in dense + sparse})
                    # Whole payloads already: nothing is read again.
                    again = WholePayloads(dense, sparse)
                    complete(again, "c", dense, sparse, k, tuning, group_by)
                    assert again.asked == []
    assert read < 0.8 * candidates, "grouped by page, only the chunks a result can show are read whole"
