"""The store interface on both engines (the embedded qdrant-edge shard and qdrant-client's local
mode), the turn-taking between processes on one embedded store, and the fast query encoder."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from harvester.index.engines import open_store
from harvester.index.store import (
    NODE_CONTENT,
    Point,
    Query,
    Scope,
    StoreUnavailable,
    chunk_point_id,
)
from tests.conftest import import_prerequisite

REPO = Path(__file__).resolve().parent.parent


def vec(i: int) -> list[float]:
    v = np.zeros(8)
    v[i % 8] = 1.0
    v[(i + 1) % 8] = 0.1
    return (v / np.linalg.norm(v)).tolist()


def points() -> list[Point]:
    out = []
    for i, (url, section) in enumerate([("https://a.test/docs/x.html", "Guide"), ("https://a.test/docs/y.html", "Guide"),
                                        ("https://a.test/api/z.html", "API"), ("https://b.test/docs/x.html", "Guide")]):
        payload = {"page_content": f"chunk {i} about topic{i}", "metadata": {
            "source_url": url, "domain": url.split("/")[2], "section": section, "chunk_index": 0, "aliases": []}}
        out.append(Point(chunk_point_id(url, str(i)), payload, vec(i), ([i + 1], [1.0]), "m"))
    return out


@pytest.fixture(params=["edge", "local"])
def store(request, tmp_path):
    store = open_store(None, None, str(tmp_path / "q"), request.param)
    store.ensure_collection("c", "m", 8)
    store.upsert("c", points())
    yield store
    store.close()


def test_store_queries_filters_and_updates(store):
    (dense,) = store.query("c", [Query(2, using="m", dense=vec(2))])
    assert dense[0].payload["metadata"]["source_url"] == "https://a.test/api/z.html"
    (sparse,) = store.query("c", [Query(5, sparse=([3], [1.0]))])
    assert [c.payload["page_content"] for c in sparse] == ["chunk 2 about topic2"]
    def urls(scope):
        return {c.payload["metadata"]["source_url"] for c in store.query("c", [Query(10, using="m", dense=vec(0), scope=scope)])[0]}
    assert urls(Scope(domain="b.test")) == {"https://b.test/docs/x.html"}
    assert urls(Scope(url_prefix="https://a.test/docs/")) == {"https://a.test/docs/x.html", "https://a.test/docs/y.html"}
    assert urls(Scope(section="API")) == {"https://a.test/api/z.html"}
    assert store.count("c") == 4 and store.count("c", Scope(domain="a.test")) == 3
    assert {r.id for r in store.scroll("c")} == {p.id for p in points()}
    (record,) = list(store.scroll("c", Scope(url="https://b.test/docs/x.html"), keys=["metadata.source_url"]))
    assert record.payload == {"metadata": {"source_url": "https://b.test/docs/x.html"}}
    store.set_metadata("c", Scope(url="https://b.test/docs/x.html"), {"aliases": ["https://b.test/x"]})
    (record,) = list(store.scroll("c", Scope(url="https://b.test/docs/x.html")))
    assert record.payload["metadata"]["aliases"] == ["https://b.test/x"] and record.payload["metadata"]["section"] == "Guide"
    first = points()[0]
    store.overwrite_payloads("c", [Point(first.id, {"page_content": "rewritten", "metadata": first.payload["metadata"]})])
    (dense,) = store.query("c", [Query(1, using="m", dense=vec(0))])
    assert dense[0].payload["page_content"] == "rewritten", "the vector is kept, the payload replaced"
    store.delete("c", scope=Scope(domain="a.test", exclude_ids=(first.id,)))
    assert {r.id for r in store.scroll("c")} == {first.id, points()[3].id}
    store.delete("c", [first.id])
    assert store.count("c") == 1
    exported = list(store.points("c"))
    assert exported[0].using == "m" and len(exported[0].dense) == 8 and exported[0].sparse == ([4], [1.0])


def test_store_reads_payloads_by_id(store):
    first, second = points()[:2]
    read = store.retrieve("c", [first.id, second.id, "00000000-0000-0000-0000-00000000dead"], ["page_content"])
    assert read == {first.id: {"metadata": first.payload["metadata"]}, second.id: {"metadata": second.payload["metadata"]}}
    assert store.retrieve("c", []) == {}
    # The embedded engine then answers those keys from memory; local mode reads payloads as before.
    store.remember("c", ["metadata.source_url"])
    (dense,) = store.query("c", [Query(1, using="m", dense=vec(2), keys=("metadata.source_url",))])
    if store.engine == "edge":
        assert dense[0].payload == {"metadata": {"source_url": "https://a.test/api/z.html"}}
    else:
        assert dense[0].payload["metadata"]["source_url"] == "https://a.test/api/z.html"
        assert dense[0].payload["page_content"] == "chunk 2 about topic2"


def test_the_embedded_store_keeps_dense_vectors_as_16_bit_floats_and_ranks_as_with_32(tmp_path):
    rng = np.random.default_rng(38)
    vectors = rng.standard_normal((300, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = open_store(None, None, str(tmp_path / "q"), "edge")
    store.ensure_collection("c", "m", 32)
    store.upsert("c", [Point(chunk_point_id("https://a.test/", str(i)), {"page_content": str(i)}, v.tolist(), None, "m")
                       for i, v in enumerate(vectors)])
    config = json.loads((tmp_path / "q" / "edge" / "c" / "edge_config.json").read_text())
    assert config["vectors"]["m"]["datatype"] == "float16"
    stored = {p.payload["page_content"]: p.dense for p in store.points("c")}
    assert max(abs(a - b) for i, v in enumerate(vectors) for a, b in zip(stored[str(i)], v)) < 1e-3
    assert any(a != b for a, b in zip(stored["0"], vectors[0])), "rounded: 16-bit floats are stored"
    for query in rng.standard_normal((20, 32)).astype(np.float32):
        expected = [str(i) for i in np.argsort(-(vectors @ (query / np.linalg.norm(query))))[:5]]
        (found,) = store.query("c", [Query(5, using="m", dense=query.tolist())])
        assert [c.payload["page_content"] for c in found] == expected
    store.close()


RANKING = ("metadata.source_url", "metadata.domain")
WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {repo!r})
    from harvester.index.engines import open_store
    from harvester.index.store import Point
    store = open_store(None, None, {path!r}, "edge", wait=30)
    store.overwrite_payloads("c", [Point({point!r}, {{"page_content": "moved", "metadata": {{"source_url": "https://c.test/moved.html", "domain": "c.test"}}}})])
    store.close()
""")


def test_a_remembering_store_answers_keys_from_memory_until_a_write(tmp_path, monkeypatch):
    path = str(tmp_path / "q")
    store = open_store(None, None, path, "edge", wait=30)
    store.ensure_collection("c", "m", 8)
    store.upsert("c", points())

    def nearest(i: int) -> dict:
        (found,) = store.query("c", [Query(1, using="m", dense=vec(i), exclude_keys=("page_content",), keys=RANKING)])
        return found[0].payload

    assert nearest(2)["metadata"]["section"] == "API", "not remembered: the whole payload but excluded keys"
    # A second chunk of the page of point 2: its remembered values are the same dict.
    twin = Point(chunk_point_id("https://a.test/api/z.html", "twin"), points()[2].payload, vec(5), None, "m")
    store.upsert("c", [twin])
    store.remember("c", RANKING)
    assert nearest(2) == {"metadata": {"source_url": "https://a.test/api/z.html", "domain": "a.test"}}
    assert store._remembered["c"].values[twin.id] is store._remembered["c"].values[points()[2].id]
    wider = store.query("c", [Query(1, using="m", dense=vec(2), keys=("metadata.section",))])[0][0].payload
    assert wider["metadata"]["section"] == "API" and wider["page_content"], "keys not remembered: read"
    # Written here: read again.
    first = points()[0]
    store.overwrite_payloads("c", [Point(first.id, {"page_content": "x", "metadata": {"source_url": "https://a.test/new.html",
                                                                                       "domain": "a.test"}})])
    assert nearest(0)["metadata"]["source_url"] == "https://a.test/new.html"
    assert nearest(2)["metadata"]["source_url"] == "https://a.test/api/z.html"
    # Written by another process, which the idle store hands the folder to: read again once it is back.
    writer = subprocess.run([sys.executable, "-c", WRITER.format(repo=str(REPO), path=path, point=points()[2].id)],
                            capture_output=True, text=True, timeout=120)
    assert writer.returncode == 0, writer.stderr[-2000:]
    assert nearest(2) == {"metadata": {"source_url": "https://c.test/moved.html", "domain": "c.test"}}
    store.close()
    # Written while it reads: none of what it read is kept.
    store = open_store(None, None, path, "edge", wait=30)
    reading = store.scroll

    def scroll_and_write(*args, **kwargs):  # type: ignore[no-untyped-def]
        store.overwrite_payloads("c", [Point(first.id, {"page_content": "y", "metadata": {
            "source_url": "https://a.test/newer.html", "domain": "a.test"}})])
        yield from reading(*args, **kwargs)

    monkeypatch.setattr(store, "scroll", scroll_and_write)
    store.remember("c", RANKING)
    assert store._remembered["c"].values == {}
    assert nearest(0)["metadata"]["source_url"] == "https://a.test/newer.html"
    store.close()
    # Past the limit nothing is remembered.
    monkeypatch.setattr("harvester.index.engines.edge.REMEMBER_MAX_POINTS", 3)
    store = open_store(None, None, path, "edge", wait=30)
    store.remember("c", RANKING)
    assert "page_content" in store.query("c", [Query(1, using="m", dense=vec(1), keys=RANKING)])[0][0].payload
    store.close()


@pytest.fixture
def edge_and_local(tmp_path):
    """An embedded store holding ``points()`` in collection "c", and an empty local-mode store."""
    source = open_store(None, None, str(tmp_path / "e"), "edge")
    source.ensure_collection("c", "m", 8)
    source.upsert("c", points())
    target = open_store(None, None, str(tmp_path / "l"), "local")
    yield source, target
    source.close()
    target.close()


def test_export_into_local_mode_keeps_vectors_and_payloads(edge_and_local):
    from harvester.index.export import mirror_collection

    source, target = edge_and_local
    assert mirror_collection(source, "c", target, batch=3).copied == 4
    (hit,) = target.query("c", [Query(1, using="m", dense=vec(3))])
    assert hit[0].payload["metadata"]["source_url"] == "https://b.test/docs/x.html"
    assert target.dense_vectors("c") == {"m": 8}


def test_a_re_export_deletes_the_points_the_source_no_longer_holds(edge_and_local):
    from harvester.index.export import mirror_collection

    source, target = edge_and_local
    assert mirror_collection(source, "c", target).deleted == 0
    source.delete("c", scope=Scope(url="https://b.test/docs/x.html"))  # a pruned page
    source.delete("c", [points()[0].id])  # a replaced chunk
    counts = mirror_collection(source, "c", target, batch=1)
    assert (counts.copied, counts.deleted) == (2, 2)
    assert {r.id for r in target.scroll("c")} == {r.id for r in source.scroll("c")}


HOLDER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {repo!r})
    from harvester.index.engines import open_store
    from harvester.index.store import Point, Query
    store = open_store(None, None, {path!r}, "edge")
    store.ensure_collection("c", "m", 8)
    store.upsert("c", [Point("00000000-0000-0000-0000-000000000001", {{"page_content": "held"}}, [1.0] + [0.0] * 7, None, "m")])
    print("holding", flush=True)
    time.sleep(float(sys.argv[1]))
    # Reads again after the other process wrote: it sees the write.
    print(store.count("c"), flush=True)
    store.close()
""")


def test_two_processes_take_turns_on_one_embedded_store(tmp_path):
    path = str(tmp_path / "q")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER.format(repo=str(REPO), path=path), "3"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        start = time.monotonic()
        store = open_store(None, None, path, "edge", wait=30)
        store.upsert("c", [Point("00000000-0000-0000-0000-000000000002", {"page_content": "second"},
                                 [0.0, 1.0] + [0.0] * 6, None, "m")])
        assert store.count("c") == 2
        assert time.monotonic() - start < 2.5, "the idle holder handed the store over at once"
        out, _ = holder.communicate(timeout=60)
        assert out.strip() == "2"
        assert store.count("c") == 2
        store.close()
    finally:
        holder.kill()


def test_a_store_held_past_the_wait_is_a_clear_error(tmp_path):
    from harvester.index.engines.lease import Lease

    path = tmp_path / "q"
    store = open_store(None, None, str(path), "edge")
    store.ensure_collection("c", "m", 8)
    store.close()
    blocker = Lease(path / "edge" / "c", 1)
    blocker.acquire()  # held without a shard behind it: nobody hands it over
    try:
        other = open_store(None, None, str(path), "edge", wait=0.3)
        with pytest.raises(StoreUnavailable, match="in use by another process"):
            other.count("c")
        other.close()
    finally:
        blocker.release()


def test_payload_carries_a_llamaindex_node_with_the_text_once(tmp_path):
    import json

    from harvester.index.store import NODE_METADATA_KEYS, chunk_payload

    class Page:
        url, title, section, domain, source_type = "https://a.test/p", "P", "S", "a.test", "html"
        breadcrumbs, content_hash, etag, last_modified, chunks = [], "h", None, None, [None]

    chunk = {"id": "00000000-0000-0000-0000-000000000009", "index": 0, "text": "body text",
             "heading_path": ["P", "H"], "token_count": 2}
    payload = chunk_payload(Page(), chunk, "2026-01-01")
    node = json.loads(payload[NODE_CONTENT])
    assert node["text"] == "body text" and node["id_"] == chunk["id"]
    assert set(node["metadata"]) == set(NODE_METADATA_KEYS) and node["metadata"]["heading_path"] == "P > H"
    assert payload["_node_type"] == "TextNode"


def test_payload_carries_the_frameworks_citation_and_neighbour_fields():
    import json

    from harvester.index.store import NODE_EXCLUDED_LLM_KEYS, chunk_payload

    chunks = [{"id": f"00000000-0000-0000-0000-00000000000{i}", "index": i, "text": f"part {i}",
               "heading_path": ["P", f"H{i}"], "token_count": 2} for i in range(3)]

    class Page:
        url, title, section, domain, source_type = "https://a.test/p", "P", "S", "a.test", "html"
        breadcrumbs, content_hash, etag, last_modified = [], "h", None, None

    Page.chunks = chunks
    first, middle = chunk_payload(Page(), chunks[0], "2026-01-01"), chunk_payload(Page(), chunks[1], "2026-01-01",
                                                                                  anchor="h1")
    assert first["metadata"]["source"] == "https://a.test/p" and middle["metadata"]["source"] == "https://a.test/p#h1"
    assert middle["doc_id"] == "https://a.test/p", "LlamaIndex's delete(ref_doc_id) matches it"
    node = json.loads(middle[NODE_CONTENT])
    assert {key: rel["node_id"] for key, rel in node["relationships"].items()} == {
        "1": "https://a.test/p", "2": chunks[0]["id"], "3": chunks[2]["id"]}, "source, previous, next"
    assert "2" not in json.loads(first[NODE_CONTENT])["relationships"], "the first chunk has no previous"
    assert node["excluded_llm_metadata_keys"] == list(NODE_EXCLUDED_LLM_KEYS)


def test_fast_query_encoder_matches_the_model(tmp_path):
    import_prerequisite("onnxruntime")
    from harvester.embedding.folder import DEFAULT_MODEL
    from harvester.embedding.models import load_embedder
    from harvester.embedding.query import load_onnx_query_encoder

    encoder = load_onnx_query_encoder(DEFAULT_MODEL, str(tmp_path / "onnx"))
    assert encoder is not None
    model = load_embedder(DEFAULT_MODEL)
    texts = ["how do I add a route", "RuntimeError: Working outside of application context", "x " * 400]
    fast, slow = encoder.encode(texts, batch_size=1), model.encode(texts, batch_size=4)
    assert encoder.vector_name == model.vector_name and encoder.dimension == model.dimension
    assert np.min(np.sum(fast * slow, axis=1)) > 0.9999
    assert load_onnx_query_encoder(DEFAULT_MODEL, str(tmp_path / "empty"), export=False) is None


def test_an_old_local_mode_collection_is_found_and_moved_beside_itself(tmp_path):
    from harvester.index.engines import legacy_collections
    from harvester.index.export import mirror_collection

    path = str(tmp_path / "q")
    old = open_store(None, None, path, "local")
    old.ensure_collection("c", "m", 8)
    old.upsert("c", points())
    old.close()
    assert legacy_collections(path) == ["c"]
    source, target = open_store(None, None, path, "local"), open_store(None, None, path, "edge")
    try:
        assert mirror_collection(source, "c", target).copied == 4
    finally:
        source.close()
        target.close()
    assert legacy_collections(path) == []
    store = open_store(None, None, path, "edge")
    assert store.count("c") == 4
    store.close()
