"""Context lines, BM25 sparse vectors and the three search modes on a real local Qdrant."""

from __future__ import annotations

import pytest
from qdrant_client import QdrantClient, models

from harvester.chunking.context import context_line, embedding_text, heading_paths
from harvester.embedding.folder import DEFAULT_MODEL
from harvester.embedding.models import load_embedder
from harvester.index.lexical import document_vector, query_vector, terms
from harvester.index.search import (
    FUSIONS,
    SearchTuning,
    _normalised,
    _score_fusion,
    collapse,
    search,
)
from harvester.index.store import chunk_vectors, ensure_collection, point_id


def test_context_line_skips_a_heading_equal_to_the_title():
    assert context_line("Quickstart", ["Quickstart", "Routing", "Variable Rules"]) == \
        "Quickstart > Routing > Variable Rules"
    assert context_line("", ["A"]) == "A"
    assert embedding_text("T > A", "body") == "T > A\n\nbody"
    assert embedding_text("", "body") == "body"


def test_heading_paths_follow_levels():
    headings = [{"level": 1, "text": "A"}, {"level": 2, "text": "B"}, {"level": 3, "text": "C"},
                {"level": 2, "text": "D"}, {"level": 1, "text": "E"}]
    assert heading_paths(headings) == [("A",), ("A", "B"), ("A", "B", "C"), ("A", "D"), ("E",)]


def test_terms_split_identifiers_both_ways():
    assert terms("Use url_for() and flask.Flask") == [
        "use", "url_for", "url", "for", "and", "flask.flask", "flask", "flask"]


def test_document_vector_saturates_and_normalises_length():
    indices, values = document_vector("cache " * 3)
    one, _ = query_vector("cache")
    assert indices == one and 1.0 < values[0] < 2.2
    short = dict(zip(*document_vector("cache other")))
    long = dict(zip(*document_vector("cache " + "other " * 400)))
    assert long[one[0]] < short[one[0]]


def test_collapse_keeps_the_first_of_identical_texts():
    hits = [{"text": "same  text"}, {"text": "same text"}, {"text": "other"}]
    for h in hits:
        h["duplicates"] = 0
    kept = collapse(hits, 5)
    assert [h["text"] for h in kept] == ["same  text", "other"] and kept[0]["duplicates"] == 1


DOCS = {
    "http://h/cache.html": "## Caching responses\n\nThe CacheMiddleware stores responses on disk with HTTPCACHE_DIR.",
    "http://h/retry.html": "## Retrying requests\n\nFailed downloads are retried up to RETRY_TIMES times.",
    "http://h/proxy.html": "## Using a proxy\n\nSet the proxy meta key on a request to route it through a proxy.",
    "http://h/boiler1.html": "## Note\n\nThis documentation is for an old version.",
    "http://h/boiler2.html": "## Note\n\nThis documentation is for an old version.",
}


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    embedder = load_embedder(DEFAULT_MODEL)
    client = QdrantClient(path=str(tmp_path_factory.mktemp("q")))
    ensure_collection(client, "c", embedder.vector_name, embedder.dimension)
    texts = [embedding_text(url.rsplit("/", 1)[1], text) for url, text in DOCS.items()]
    vectors = embedder.encode(texts, batch_size=8)
    client.upsert("c", points=[
        models.PointStruct(id=point_id(url, 0), vector=chunk_vectors(embedder.vector_name, vector, text),
                           payload={"page_content": DOCS[url], "metadata": {"source_url": url}})
        for url, vector, text in zip(DOCS, vectors, texts, strict=True)
    ])
    yield client, embedder
    client.close()


@pytest.mark.parametrize(("mode", "fusion"), [("dense", "rrf"), ("sparse", "rrf"),
                                               *(("hybrid", fusion) for fusion in FUSIONS)])
def test_each_mode_finds_the_page(collection, mode, fusion):
    client, embedder = collection
    tuning = SearchTuning(fusion=fusion)
    hits = search(client, "c", embedder, "RETRY_TIMES retried downloads", 3, mode, tuning)
    assert hits[0]["url"] == "http://h/retry.html"
    hits = search(client, "c", embedder, "store responses in a disk cache", 3, mode, tuning)
    assert hits[0]["url"] == "http://h/cache.html"


def test_normalised_scores():
    assert _normalised([3.0, 2.0, 1.0], "minmax") == [1.0, 0.5, 0.0]
    assert _normalised([5.0, 5.0], "minmax") == [0.0, 0.0]
    dbsf = _normalised([3.0, 2.0, 1.0], "dbsf")
    assert dbsf[1] == pytest.approx(0.5) and dbsf[0] < 1.0 and dbsf[2] > 0.0


class _Side:
    def __init__(self, scored):
        self.points = [models.ScoredPoint(id=i, version=0, score=s, payload={"page_content": i}) for i, s in scored]


class _TwoSides:
    """A client whose dense side prefers "a" by a hair and whose sparse side is sure of "b"."""

    def query_batch_points(self, collection, requests):
        return [_Side([("a", 0.61), ("b", 0.60), ("c", 0.20)]), _Side([("b", 12.0), ("a", 1.0), ("c", 0.5)])]


@pytest.mark.parametrize("fusion", ["minmax", "dbsf"])
def test_score_fusion_keeps_a_confident_lexical_hit_first(fusion):
    hits = _score_fusion(_TwoSides(), "c", "dense", [0.0], models.SparseVector(indices=[], values=[]),
                         SearchTuning(fusion=fusion))
    assert [h["text"] for h in hits] == ["b", "a", "c"]
    by_dense_only = _score_fusion(_TwoSides(), "c", "dense", [0.0], models.SparseVector(indices=[], values=[]),
                                  SearchTuning(fusion=fusion, sparse_weight=0.0))
    assert by_dense_only[0]["text"] == "a"


def test_unknown_fusion_is_refused():
    with pytest.raises(ValueError, match="unknown fusion"):
        _score_fusion(_TwoSides(), "c", "dense", [0.0], models.SparseVector(indices=[], values=[]),
                      SearchTuning(fusion="borda"))


def test_exact_identifier_needs_the_sparse_side(collection):
    client, embedder = collection
    sparse = search(client, "c", embedder, "HTTPCACHE_DIR", 1, "sparse")
    hybrid = search(client, "c", embedder, "HTTPCACHE_DIR", 1, "hybrid")
    assert sparse[0]["url"] == hybrid[0]["url"] == "http://h/cache.html"


def test_search_collapses_identical_chunks(collection):
    client, embedder = collection
    hits = search(client, "c", embedder, "documentation for an old version", 5, "hybrid")
    texts = [h["text"] for h in hits]
    assert len(texts) == len(set(texts))
    assert hits[0]["duplicates"] == 1


def test_unknown_mode_is_refused(collection):
    client, embedder = collection
    with pytest.raises(ValueError, match="unknown search mode"):
        search(client, "c", embedder, "x", 1, "fuzzy", SearchTuning())
