"""The BM25 sparse encoder: FastEmbed's Qdrant/bm25 terms (ids and values), plus the words as written."""

from __future__ import annotations

import pytest

from harvester.index.lexical import (
    document_vector,
    exact_id,
    fastembed_query,
    sparse_query,
    stems,
    term_id,
    tokens,
)

# Made by fastembed 0.9.1's Bm25("Qdrant/bm25") (language english, k 1.2, b 0.75, avg_len 256), its
# stop words file being NLTK's English list (the list Qdrant/bm25 ships): Bm25.embed (sorted by id)
# and Bm25.query_embed.
FASTEMBED = [
    ("How do I configure url_for() with app.config['SERVER_NAME'] behind a proxy?",
     {262840313: 1.660867, 374821798: 1.660867, 1060832955: 1.660867, 1660787102: 1.660867,
      1709660394: 1.660867, 2007895308: 1.660867, 2039377815: 1.660867}),
    ("Scrapy's HttpCacheMiddleware stores responses; the __init__ method isn't called twice. Running, runs, ran!",
     {239488255: 1.64342, 243905464: 1.88141, 440438560: 1.64342, 546776626: 1.64342, 567658162: 1.64342,
      632657554: 1.64342, 989509788: 1.64342, 1050980247: 1.64342, 1313159698: 1.64342, 1975115648: 1.64342}),
    ("Ünïcode wörds: naïve café — résumé 2.28.1 and CONCURRENT_REQUESTS_PER_DOMAIN",
     {19522071: 1.652097, 605818632: 1.652097, 756638508: 1.652097, 828549378: 1.652097, 1347515812: 1.652097,
      1628737062: 1.652097, 1700062636: 1.652097, 1810453357: 1.652097, 2112545234: 1.652097}),
]


@pytest.mark.parametrize(("text", "expected"), FASTEMBED)
def test_stems_are_fastembeds_terms_with_fastembeds_values(text, expected):
    assert sorted(fastembed_query(text)[0]) == sorted(expected)
    ours = dict(zip(*document_vector(text), strict=True))
    assert {i: round(ours[i], 5) for i in expected} == {i: round(v, 5) for i, v in expected.items()}
    # Our own query carries every term a FastEmbed query carries.
    assert set(expected) <= set(sparse_query(text)[0])


def test_words_as_written_are_terms_of_their_own():
    text = "Log In with url_for"
    assert tokens(text) == ["log", "in", "with", "url_for"]
    assert stems(text) == ["log", "url_for"]  # "in" and "with" are stop words
    indices = set(sparse_query(text)[0])
    assert indices == {term_id("log"), term_id("url_for"), *(exact_id(w) for w in ("log", "in", "with", "url_for"))}
    assert exact_id("log") != term_id("log")


def test_stemming_matches_other_forms_of_a_word():
    doc = set(document_vector("Configuration of the installed extensions")[0])
    query = set(sparse_query("configuring installing an extension")[0])
    assert {term_id("configur"), term_id("instal"), term_id("extens")} <= doc & query
    assert exact_id("configuring") not in doc


def test_document_vector_saturates_and_normalises_length():
    one = term_id(stems("cache")[0])
    assert dict(zip(*document_vector("cache " * 3)))[one] > dict(zip(*document_vector("cache")))[one]
    short = dict(zip(*document_vector("cache files")))
    long = dict(zip(*document_vector("cache " + "files " * 400)))
    assert long[one] < short[one] < 2.2


def test_punctuation_only_has_no_terms():
    assert sparse_query("?!") == ([], [])
    assert document_vector("-- ... _")[0] == []


def test_against_fastembed_itself(tmp_path):
    """The same, against the library, where it is installed (it is not a dependency)."""
    bm25 = pytest.importorskip("fastembed.sparse.bm25")
    from harvester.index.lexical import STOP_WORDS

    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "english.txt").write_text("\n".join(sorted(STOP_WORDS)))
    model = bm25.Bm25("Qdrant/bm25", specific_model_path=str(tmp_path))
    for text, _ in FASTEMBED:
        embedded = next(iter(model.embed([text])))
        ours = dict(zip(*document_vector(text), strict=True))
        for index, value in zip(embedded.indices.tolist(), embedded.values.tolist(), strict=True):
            assert ours[index] == pytest.approx(value, rel=1e-5)
        assert sorted(next(iter(model.query_embed(text))).indices.tolist()) == fastembed_query(text)[0]
