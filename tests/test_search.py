"""Context lines, the ranking (fusion, pages) and the three search modes on a real local Qdrant."""

from __future__ import annotations

import pytest
from qdrant_client import QdrantClient, models

from harvester.chunking.context import context_line, embedding_text, heading_paths
from harvester.embedding.folder import DEFAULT_MODEL
from harvester.embedding.models import load_embedder
from harvester.index.search import (
    FUSIONS,
    Candidate,
    SearchTuning,
    collapse,
    fuse,
    group_pages,
    rank,
    search,
)
from harvester.index.store import CollectionMismatch, chunk_vectors, ensure_collection, point_id


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
    "http://h/hours.html": "## Opening hours\n\nThe café by the museum opens at eight.",
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


@pytest.mark.parametrize(("mode", "fusion", "group_by"), [
    ("dense", "score", "page"), ("sparse", "score", "page"), ("hybrid", "score", None),
    *(("hybrid", fusion, "page") for fusion in FUSIONS)])
def test_each_mode_finds_the_page(collection, mode, fusion, group_by):
    client, embedder = collection
    tuning = SearchTuning(fusion=fusion)
    hits = search(client, "c", embedder, "RETRY_TIMES retried downloads", 3, mode, tuning, group_by=group_by)
    assert hits[0]["url"] == "http://h/retry.html"
    hits = search(client, "c", embedder, "store responses in a disk cache", 3, mode, tuning, group_by=group_by)
    assert hits[0]["url"] == "http://h/cache.html"


def test_a_query_typed_with_combining_marks_finds_the_words_stored_composed(collection):
    client, embedder = collection
    hits = search(client, "c", embedder, "cafe\u0301 museum", 3, "sparse")
    assert hits and hits[0]["url"] == "http://h/hours.html"
    assert [h["url"] for h in search(client, "c", embedder, "cafe\u0301", 3, "sparse")] == ["http://h/hours.html"]


def chunk(key, score, url=None):
    return Candidate(key, score, {"page_content": key, "metadata": {"source_url": url or f"http://h/{key}.html"}})


def test_score_fusion_keeps_a_confident_lexical_hit_first():
    # Dense prefers "a" by a hair; BM25 is sure of "b".
    dense = [chunk("a", 0.61), chunk("b", 0.60), chunk("c", 0.20)]
    sparse = [chunk("b", 12.0), chunk("a", 1.0), chunk("c", 0.5)]
    assert [c.id for c, _ in fuse(dense, sparse)] == ["b", "a", "c"]
    fused = {c.id: score for c, score in fuse(dense, sparse, SearchTuning(baseline=0.0))}
    # Cosine as it is, BM25 over the query's best, weighted (0.4).
    assert fused["b"] == pytest.approx(0.60 + 0.4 * 1.0)
    assert fused["a"] == pytest.approx(0.61 + 0.4 * 1.0 / 12.0)
    # Each half measured from 0.4 times its weakest candidate's score.
    fused = {c.id: score for c, score in fuse(dense, sparse)}
    assert fused["b"] == pytest.approx((0.60 - 0.4 * 0.20) + 0.4 * (1.0 - 0.4 * 0.5 / 12.0))
    assert fuse(dense, sparse, SearchTuning(sparse_weight=0.0))[0][0].id == "a"
    assert [c.id for c, _ in fuse(dense, [])] == ["a", "b", "c"]
    assert fuse(dense, sparse, SearchTuning(fusion="minmax"))[0][0].id == "b"
    # Ranks alone cannot tell a sure BM25 hit from a close call.
    assert fuse(dense, sparse, SearchTuning(fusion="rrf"))[0][0].id == "a"


def test_a_chunk_one_side_did_not_find_stands_at_that_sides_baseline():
    dense, sparse = [chunk("a", 0.5), chunk("c", 0.3)], [chunk("b", 4.0), chunk("c", 2.0)]
    fused = {c.id: s for c, s in fuse(dense, sparse, SearchTuning(baseline=0.0))}
    assert fused == {"a": pytest.approx(0.5), "b": pytest.approx(0.4), "c": pytest.approx(0.3 + 0.4 * 0.5)}
    # Measured from each half's baseline (0.4 times its weakest), what one half found scores above
    # it and what it did not find at it.
    fused = {c.id: s for c, s in fuse(dense, sparse)}
    assert fused == {"a": pytest.approx(0.5 - 0.12), "b": pytest.approx(0.4 * (1 - 0.2)),
                     "c": pytest.approx(0.3 - 0.12 + 0.4 * (0.5 - 0.2))}


def test_pages_count_a_second_good_chunk_not_many_weak_ones():
    ranked = [(chunk("long1", 0.0, "http://h/long"), 0.80), (chunk("short1", 0.0, "http://h/short"), 0.79),
              (chunk("short2", 0.0, "http://h/short"), 0.70)]
    ranked += [(chunk(f"long{i}", 0.0, "http://h/long"), 0.30) for i in range(2, 12)]
    pages = group_pages(ranked, 5)
    assert [p["url"] for p in pages] == ["http://h/short", "http://h/long"]
    assert pages[0]["text"] == "short1" and pages[0]["matches"] == 2
    assert pages[0]["score"] == pytest.approx(0.79 + 0.25 * 0.70)
    assert pages[1]["matches"] == 11
    # Without page evidence the single best chunk decides.
    assert group_pages(ranked, 5, SearchTuning(page_weight=0.0))[0]["url"] == "http://h/long"


def test_rank_fills_up_from_past_the_depth_without_reordering():
    dense = [chunk(f"d{i}", 0.9 - i / 100) for i in range(8)]
    tuning = SearchTuning(depth=3)
    results = rank(dense, [], 5, tuning)
    assert [r["url"] for r in results] == [f"http://h/d{i}.html" for i in range(5)]
    chunks = rank(dense, [], 5, tuning, group_by=None)
    assert [r["text"] for r in chunks] == [f"d{i}" for i in range(5)]


def test_unknown_fusion_and_grouping_are_refused(collection):
    client, embedder = collection
    with pytest.raises(ValueError, match="unknown fusion"):
        search(client, "c", embedder, "x", 1, tuning=SearchTuning(fusion="borda"))
    with pytest.raises(ValueError, match="unknown grouping"):
        search(client, "c", embedder, "x", 1, group_by="site")


def test_a_collection_of_the_old_lexical_encoding_is_refused(tmp_path):
    client = QdrantClient(path=str(tmp_path))
    client.create_collection(
        "old", vectors_config={"m": models.VectorParams(size=4, distance=models.Distance.COSINE)},
        sparse_vectors_config={"bm25": models.SparseVectorParams(modifier=models.Modifier.IDF)})
    with pytest.raises(CollectionMismatch, match=r"older lexical encoding.*Re-crawl"):
        ensure_collection(client, "old", "m", 4)
    client.close()


def test_exact_identifier_needs_the_sparse_side(collection):
    client, embedder = collection
    sparse = search(client, "c", embedder, "HTTPCACHE_DIR", 1, "sparse")
    hybrid = search(client, "c", embedder, "HTTPCACHE_DIR", 1, "hybrid")
    assert sparse[0]["url"] == hybrid[0]["url"] == "http://h/cache.html"


def test_search_collapses_identical_chunks(collection):
    client, embedder = collection
    hits = search(client, "c", embedder, "documentation for an old version", 5, "hybrid", group_by=None)
    texts = [h["text"] for h in hits]
    assert len(texts) == len(set(texts))
    assert hits[0]["duplicates"] == 1


def test_pages_are_one_result_each(collection):
    client, embedder = collection
    hits = search(client, "c", embedder, "documentation for an old version", 5)
    urls = [h["url"] for h in hits]
    assert len(urls) == len(set(urls)) == 5
    assert {"http://h/boiler1.html", "http://h/boiler2.html"} <= set(urls[:2])


def test_unknown_mode_is_refused(collection):
    client, embedder = collection
    with pytest.raises(ValueError, match="unknown search mode"):
        search(client, "c", embedder, "x", 1, "fuzzy", SearchTuning())


def test_search_fetches_deeper_when_few_pages_hold_the_candidates(tmp_path):
    embedder = load_embedder(DEFAULT_MODEL)
    client = QdrantClient(path=str(tmp_path))
    ensure_collection(client, "c", embedder.vector_name, embedder.dimension)
    texts = {(f"http://h/long{p}.html", i): f"Signals part {i} of page {p}: connect a receiver to the signal."
             for p in range(2) for i in range(40)}
    texts[("http://h/other.html", 0)] = "Receivers of events are functions connected to a sender."
    texts[("http://h/third.html", 0)] = "Blinker provides the signal support."
    vectors = embedder.encode(list(texts.values()), batch_size=32)
    client.upsert("c", points=[
        models.PointStruct(id=point_id(url, i), vector=chunk_vectors(embedder.vector_name, vector, text),
                           payload={"page_content": text, "metadata": {"source_url": url}})
        for ((url, i), text), vector in zip(texts.items(), vectors, strict=True)])
    hits = search(client, "c", embedder, "connect a receiver to a signal", 4)
    assert len(hits) == 4 and {h["url"] for h in hits} >= {"http://h/other.html", "http://h/third.html"}
    client.close()
