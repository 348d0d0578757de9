"""LangChain's and LlamaIndex's Qdrant vector stores read a collection Harvester wrote: a real
crawl into the embedded engine, ``scrapy export --to-path`` into qdrant-client's local mode (what
the frameworks open without a server), then each framework's store with only the collection,
client, embedding and one documented argument, in dense and in hybrid mode."""

from __future__ import annotations

from itertools import pairwise

import pytest

from harvester.index.store import NODE_METADATA_KEYS, SPARSE_VECTOR
from tests.conftest import qdrant_points
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


def test_a_re_export_after_a_prune_leaves_the_frameworks_no_pruned_page(tmp_path):
    """A re-crawl prunes a page no longer linked and replaces an edited chunk; the copy that each
    crawl exports (``HARVESTER_EXPORT_PATH``) then holds exactly the store's points, so neither
    framework answers from the pruned page. The frameworks' own fields: LangChain's ``source``,
    LlamaIndex's ``ref_doc_id``, the previous and next chunks of the page, and no chunk_index or
    domain in the LLM's text."""
    import re

    from langchain_qdrant import QdrantVectorStore as LangChainStore
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import MetadataMode
    from llama_index.vector_stores.qdrant import QdrantVectorStore as LlamaIndexStore
    from qdrant_client import QdrantClient

    from harvester.index.adapters import langchain_embeddings, llamaindex_embedding
    from tests.servers.recrawl_site import EditableSite

    def exported(result) -> tuple[int, int]:
        found = re.search(r"Exported (\d+) points of 'harvester' to \S+, deleted (\d+)", result.output)
        assert found, result.output[-3000:]
        return int(found[1]), int(found[2])

    settings = {"HARVESTER_EXPORT_PATH": str(tmp_path / "local")}
    site = EditableSite(["alpha", "beta", "gamma"], sections=2)
    with SiteServer(routes=site.routes) as server:
        start = server.url + "docs/index.html"
        first = crawl("docs", start, tmp_path, settings=settings)
        site.unlink("gamma")
        site.edit("beta", 1, "One new sentence about beta.")
        site.publish(server)
        again = crawl("docs", start, tmp_path, settings=settings)
    gamma, beta = site.url(server.url, "gamma"), site.url(server.url, "beta")
    assert first.returncode == 0 and exported(first)[1] == 0, first.output[-3000:]
    assert again.returncode == 0 and again.report["recrawl"]["pruned_urls"] == [gamma], again.output[-3000:]
    (before, _), (copied, deleted) = exported(first), exported(again)
    assert deleted == before - copied + 1, "the pruned page's points and the replaced chunk"

    client = QdrantClient(path=str(tmp_path / "local"))
    try:
        assert {p.id for p in client.scroll("harvester", limit=1000)[0]} == {
            p.id for p in qdrant_points(tmp_path / "qdrant")}
        query = "Step 3 of the gamma procedure number 1 checks the gamma_1 setting."
        langchain = LangChainStore(client=client, collection_name="harvester",
                                   embedding=langchain_embeddings(), vector_name=VECTOR)
        docs = langchain.similarity_search(query, k=50)
        assert docs and gamma not in {doc.metadata["source"] for doc in docs}
        assert all(doc.metadata["source"].split("#")[0] == doc.metadata["source_url"] for doc in docs)

        llama = LlamaIndexStore(client=client, collection_name="harvester", dense_vector_name=VECTOR)
        nodes = [hit.node for hit in VectorStoreIndex.from_vector_store(
            llama, embed_model=llamaindex_embedding()).as_retriever(similarity_top_k=50).retrieve(query)]
        assert nodes and gamma not in {node.ref_doc_id for node in nodes}
        by_id = {node.node_id: node for node in nodes}
        beta_nodes = sorted((n for n in nodes if n.ref_doc_id == beta), key=lambda n: n.metadata["chunk_index"])
        assert len(beta_nodes) >= 2 and beta_nodes[0].prev_node is None and beta_nodes[-1].next_node is None
        for first, second in pairwise(beta_nodes):
            assert first.next_node.node_id == second.node_id and second.prev_node.node_id == first.node_id
        prompt = next(iter(by_id.values())).get_content(metadata_mode=MetadataMode.LLM)
        assert "chunk_index" not in prompt and "domain" not in prompt and "source_url" in prompt
        llama.delete(ref_doc_id=beta)  # what LlamaIndex's delete_ref_doc does
        assert not [p for p in client.scroll("harvester", limit=1000)[0] if p.payload["doc_id"] == beta]
    finally:
        client.close()
