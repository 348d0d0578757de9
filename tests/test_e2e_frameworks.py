"""LangChain's and LlamaIndex's Qdrant vector stores read a collection Harvester wrote: a real
crawl into the embedded engine, ``scrapy export --to-path`` into qdrant-client's local mode (what
the frameworks open without a server), then each framework's store with only the collection,
client, embedding and one documented argument, in dense and in hybrid mode."""

from __future__ import annotations

import pytest

from harvester.index.store import NODE_METADATA_KEYS, SPARSE_VECTOR
from tests.crawl import crawl, scrapy_command
from tests.servers.sites import chain_site
from tests.servers.sitesrv import SiteServer

pytestmark = pytest.mark.e2e

VECTOR = "all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from qdrant_client import QdrantClient

    workdir = tmp_path_factory.mktemp("frameworks")
    with SiteServer(routes=chain_site()) as server:
        result = crawl("docs", server.url + "docs/p1.html", workdir)
    assert result.returncode == 0, result.output
    process = scrapy_command(["export", "--to-path", str(workdir / "local")], workdir)
    assert process.returncode == 0, process.stderr[-2000:]
    assert "exported" in process.stdout
    client = QdrantClient(path=str(workdir / "local"))
    yield client, result.items
    client.close()


def target_of(items):
    page = next(item for item in items if item["url"].endswith("/p4.html"))
    return page, page["chunks"][0]["text"][:200]


def test_export_copies_every_point_with_its_vectors(exported):
    client, items = exported
    assert client.count("harvester").count == sum(len(item["chunks"]) for item in items)
    (point,), _ = client.scroll("harvester", limit=1, with_vectors=True)
    assert set(point.vector) == {VECTOR, SPARSE_VECTOR} and len(point.vector[VECTOR]) == 384


def test_langchain_reads_the_collection(exported):
    from langchain_qdrant import QdrantVectorStore, RetrievalMode

    from harvester.index.adapters import (
        LANGCHAIN_SPARSE_VECTOR,
        langchain_embeddings,
        langchain_sparse_embeddings,
    )

    client, items = exported
    page, query = target_of(items)
    embeddings = langchain_embeddings()
    store = QdrantVectorStore(client=client, collection_name="harvester", embedding=embeddings, vector_name=VECTOR)
    (doc,) = store.similarity_search(query, k=1)
    assert doc.page_content == page["chunks"][0]["text"]
    assert doc.metadata["source_url"] == page["url"] and doc.metadata["title"] == page["title"]
    assert doc.metadata["headings"] == page["chunks"][0]["heading_path"]

    hybrid = QdrantVectorStore(client=client, collection_name="harvester", embedding=embeddings, vector_name=VECTOR,
                               retrieval_mode=RetrievalMode.HYBRID, sparse_embedding=langchain_sparse_embeddings(),
                               sparse_vector_name=LANGCHAIN_SPARSE_VECTOR)
    assert hybrid.similarity_search(query, k=1)[0].metadata["source_url"] == page["url"]
    sparse = QdrantVectorStore(client=client, collection_name="harvester", retrieval_mode=RetrievalMode.SPARSE,
                               sparse_embedding=langchain_sparse_embeddings(),
                               sparse_vector_name=LANGCHAIN_SPARSE_VECTOR)
    found = sparse.similarity_search(query, k=1)
    assert found and found[0].metadata["source_url"] == page["url"], "the sparse term ids match Harvester's"


def test_llamaindex_reads_the_collection_with_flat_metadata_and_the_text_once(exported):
    from llama_index.core import VectorStoreIndex
    from llama_index.vector_stores.qdrant import QdrantVectorStore

    from harvester.index.adapters import (
        LLAMAINDEX_SPARSE_VECTOR,
        llamaindex_embedding,
        llamaindex_sparse_doc_fn,
        llamaindex_sparse_query_fn,
    )

    client, items = exported
    page, query = target_of(items)
    embedding = llamaindex_embedding()
    store = QdrantVectorStore(client=client, collection_name="harvester", dense_vector_name=VECTOR)
    index = VectorStoreIndex.from_vector_store(store, embed_model=embedding)
    (found,) = index.as_retriever(similarity_top_k=1).retrieve(query)
    node = found.node
    assert node.get_content() == page["chunks"][0]["text"]
    assert set(node.metadata) == set(NODE_METADATA_KEYS)
    assert all(not isinstance(value, (dict, list)) for value in node.metadata.values()), "flat metadata"
    assert node.metadata["source_url"] == page["url"] and node.metadata["title"] == page["title"]
    assert page["chunks"][0]["text"] not in str(node.metadata), "the text once"

    hybrid = QdrantVectorStore(client=client, collection_name="harvester", dense_vector_name=VECTOR,
                               enable_hybrid=True, sparse_vector_name=LLAMAINDEX_SPARSE_VECTOR,
                               sparse_doc_fn=llamaindex_sparse_doc_fn, sparse_query_fn=llamaindex_sparse_query_fn)
    retriever = VectorStoreIndex.from_vector_store(hybrid, embed_model=embedding).as_retriever(
        similarity_top_k=1, sparse_top_k=5, vector_store_query_mode="hybrid")
    assert retriever.retrieve(query)[0].node.metadata["source_url"] == page["url"]


def test_a_recrawl_adds_the_node_fields_to_an_older_collection_without_embedding(tmp_path):
    from tests.conftest import qdrant_points

    with SiteServer(routes=chain_site()) as server:
        old = crawl("docs", server.url + "docs/p1.html", tmp_path,
                    settings={"HARVESTER_QDRANT_LLAMAINDEX_NODES": "0"})
        assert old.returncode == 0, old.output
        before = {p.id: p.payload for p in qdrant_points(tmp_path / "qdrant")}
        assert before and not any("_node_content" in p for p in before.values())
        again = crawl("docs", server.url + "docs/p1.html", tmp_path, settings={},
                      feed="again.jsonl")
    assert again.returncode == 0, again.output
    after = {p.id: p.payload for p in qdrant_points(tmp_path / "qdrant")}
    assert set(after) == set(before)
    assert all("_node_content" in p for p in after.values()), "every payload rewritten"
    assert again.report["recrawl"]["chunks_embedded"] == 0, "the vectors were kept"
