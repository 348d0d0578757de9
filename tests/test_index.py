"""The index: point ids, payloads, collections created once and checked, bounded upserts."""

import pytest
from scrapy.utils.misc import build_from_crawler

from harvester.index.pipeline import IndexPipeline
from harvester.index.store import chunk_payload, point_id
from harvester.items import PageItem
from tests.components import crawler_with, page


def test_point_ids_are_the_stores():
    from harvester.index import ids, store

    assert ids.POINT_NAMESPACE == store.POINT_NAMESPACE
    for url, text in (("http://h/a", "# A\n\ntext"), ("http://h/b?x=1", "caf\u00e9  \n x")):
        assert ids.point_id(url, 3) == store.point_id(url, 3)
        assert ids.chunk_point_id(url, text, 2) == store.chunk_point_id(url, text, 2)
        assert ids.chunk_point_id(url, text) == store.chunk_point_id(url, text)
        assert ids.boilerplate_point_id(text) == store.boilerplate_point_id(text)


def test_point_ids_are_deterministic_uuids_and_payload_is_rag_shaped():
    assert point_id("http://h/a", 0) == point_id("http://h/a", 0) != point_id("http://h/a", 1)
    item = page()
    item.chunks = [{"id": point_id(item.url, 0), "index": 0, "text": "t", "heading_path": ["A"], "token_count": 1}]
    payload = chunk_payload(item, item.chunks[0], "2026-01-01T00:00:00+00:00")
    assert payload["page_content"] == "t"
    meta = payload["metadata"]
    for key in ("source_type", "source_url", "domain", "title", "section", "breadcrumbs", "headings",
                "chunk_index", "total_chunks", "content_hash", "harvested_at"):
        assert key in meta
    assert meta["total_chunks"] == 1 and meta["source_url"] == "http://h/a.html"


def test_collection_is_created_once_and_checked_against_the_model(tmp_path):
    from qdrant_client import QdrantClient, models

    from harvester.index.store import CollectionMismatch, ensure_collection

    client = QdrantClient(path=str(tmp_path / "q"))
    try:
        client.create_collection("old", vectors_config={"model-a": models.VectorParams(
            size=8, distance=models.Distance.COSINE)})
        with pytest.raises(CollectionMismatch, match="no 'bm25-en' sparse vector"):
            ensure_collection(client, "old", "model-a", 8)
        assert ensure_collection(client, "c", "model-a", 8) is True
        assert ensure_collection(client, "c", "model-a", 8) is False
        with pytest.raises(CollectionMismatch, match="stores 8-dimensional"):
            ensure_collection(client, "c", "model-a", 16)
        with pytest.raises(CollectionMismatch, match="no vector named 'model-b'"):
            ensure_collection(client, "c", "model-b", 8)
    finally:
        client.close()


def test_embedded_collection_is_created_once_and_checked_against_the_model(tmp_path):
    from harvester.index.engines import open_store
    from harvester.index.store import CollectionMismatch

    store = open_store(None, None, str(tmp_path / "q"))
    try:
        assert store.ensure_collection("c", "model-a", 8) is True
        assert store.ensure_collection("c", "model-a", 8) is False
        with pytest.raises(CollectionMismatch, match="stores 8-dimensional"):
            store.ensure_collection("c", "model-a", 16)
        with pytest.raises(CollectionMismatch, match="no vector named 'model-b'"):
            store.ensure_collection("c", "model-b", 8)
        assert store.collections() == ["c"]
    finally:
        store.close()


def test_a_page_of_thousands_of_chunks_is_written_in_bounded_upserts():
    """One page can hold thousands of chunks; its points go to the store WRITE_BATCH at a time, so
    their vectors never all exist as Python lists at once."""
    import numpy as np

    from harvester.index.pipeline import WRITE_BATCH

    class RecordingStore:
        def __init__(self):
            self.upserts: list[int] = []
            self.ids: list[str] = []

        def upsert(self, collection, points):
            self.upserts.append(len(points))
            self.ids += [p.id for p in points]

        def overwrite_payloads(self, collection, points):
            pass

        def delete(self, collection, ids=(), scope=None):
            pass

    pipeline = build_from_crawler(IndexPipeline, crawler_with())
    store = pipeline._client = RecordingStore()
    pipeline._vector = "all-MiniLM-L6-v2"
    size = WRITE_BATCH * 2 + 88
    page = PageItem(url="https://example.org/changelog", title="Changelog", markdown="x", content_hash="h")
    page.chunks = [{"id": f"c{i}", "text": f"entry {i}", "context": "Changelog", "index": i,
                    "heading_path": ["Changelog"], "token_count": 3} for i in range(size)]
    page.vectors = list(np.zeros((size, 4), dtype=np.float32))
    pipeline._write([page])
    pipeline._worker.close()
    assert store.upserts == [WRITE_BATCH, WRITE_BATCH, 88]
    assert store.ids == [f"c{i}" for i in range(size)]
