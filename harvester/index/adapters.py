"""Harvester's BM25 sparse encoder in the shapes LangChain and LlamaIndex take, so their hybrid
search over a Harvester collection scores the same term ids as ``scrapy search`` does.

Harvester's terms are FastEmbed's ``Qdrant/bm25`` stems plus the words as written
(``harvester.index.lexical``), so a framework querying through FastEmbed's BM25 matches the stems;
these adapters send Harvester's own query terms, words included, as ``scrapy search`` does::

    from harvester.index.adapters import LANGCHAIN_SPARSE_VECTOR, langchain_sparse_embeddings
    QdrantVectorStore(client=client, collection_name="harvester", embedding=embeddings,
                      vector_name="all-MiniLM-L6-v2", retrieval_mode=RetrievalMode.HYBRID,
                      sparse_embedding=langchain_sparse_embeddings(),
                      sparse_vector_name=LANGCHAIN_SPARSE_VECTOR)

    from harvester.index.adapters import llamaindex_sparse_doc_fn, llamaindex_sparse_query_fn
    QdrantVectorStore(client=client, collection_name="harvester", dense_vector_name="all-MiniLM-L6-v2",
                      enable_hybrid=True, sparse_vector_name=LLAMAINDEX_SPARSE_VECTOR,
                      sparse_doc_fn=llamaindex_sparse_doc_fn, sparse_query_fn=llamaindex_sparse_query_fn)

The frameworks are imported only when these are used (they are not Harvester dependencies).
"""

from __future__ import annotations

from typing import Any

from harvester.index.lexical import document_vector
from harvester.index.lexical import sparse_query as _lexical_query
from harvester.index.store import SPARSE_VECTOR

LANGCHAIN_SPARSE_VECTOR = SPARSE_VECTOR
LLAMAINDEX_SPARSE_VECTOR = SPARSE_VECTOR


def sparse_query(text: str) -> tuple[list[int], list[float]]:
    """The sparse (indices, values) of a query, as Harvester searches its sparse vector."""
    return _lexical_query(text)


def sparse_document(text: str) -> tuple[list[int], list[float]]:
    """The sparse (indices, values) of a document, as Harvester indexes it."""
    return document_vector(text)


def llamaindex_sparse_query_fn(texts: list[str]) -> tuple[list[list[int]], list[list[float]]]:
    """LlamaIndex's ``sparse_query_fn`` (a ``SparseEncoderCallable``)."""
    pairs = [sparse_query(text) for text in texts]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def llamaindex_sparse_doc_fn(texts: list[str]) -> tuple[list[list[int]], list[list[float]]]:
    """LlamaIndex's ``sparse_doc_fn`` (a ``SparseEncoderCallable``)."""
    pairs = [sparse_document(text) for text in texts]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def langchain_sparse_embeddings() -> Any:
    """A ``langchain_qdrant.SparseEmbeddings`` over Harvester's encoder."""
    from langchain_qdrant import SparseEmbeddings, SparseVector

    class HarvesterSparseEmbeddings(SparseEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[SparseVector]:
            return [SparseVector(indices=i, values=v) for i, v in map(sparse_document, texts)]

        def embed_query(self, text: str) -> SparseVector:
            indices, values = sparse_query(text)
            return SparseVector(indices=indices, values=values)

    return HarvesterSparseEmbeddings()


def langchain_embeddings(model: str | None = None) -> Any:
    """A ``langchain_core`` ``Embeddings`` over Harvester's packaged model (the vectors of the
    collection), so no other download is needed."""
    from langchain_core.embeddings import Embeddings

    embedder = _embedder(model)

    class HarvesterEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embedder.encode(list(texts), batch_size=32).tolist()

        def embed_query(self, text: str) -> list[float]:
            return embedder.encode([text], batch_size=1)[0].tolist()

    return HarvesterEmbeddings()


def llamaindex_embedding(model: str | None = None) -> Any:
    """A LlamaIndex ``BaseEmbedding`` over Harvester's packaged model."""
    from llama_index.core.embeddings import BaseEmbedding

    embedder = _embedder(model)

    class HarvesterEmbedding(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return embedder.encode([query], batch_size=1)[0].tolist()

        def _get_text_embedding(self, text: str) -> list[float]:
            return embedder.encode([text], batch_size=1)[0].tolist()

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return embedder.encode(list(texts), batch_size=32).tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    return HarvesterEmbedding(model_name=embedder.vector_name)


def _embedder(model: str | None) -> Any:
    from harvester.embedding.folder import DEFAULT_MODEL
    from harvester.embedding.models import load_embedder

    return load_embedder(model or DEFAULT_MODEL)
