"""Qdrant access shared by the index pipeline and ``scrapy search``: client, collection, points."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qdrant_client import QdrantClient, models

from harvester.index.lexical import document_vector

# The sparse vector's name says how its terms are made (harvester.index.lexical: FastEmbed's English
# BM25 stems plus the words as written). A collection holding an older encoding has another name
# and is refused, rather than queried with ids that match nothing.
SPARSE_VECTOR = "bm25-en"
OLD_SPARSE_VECTORS = {"bm25": "CRC-32 ids of unstemmed words, from an earlier Harvester"}

# Fixed so that a page's chunk keeps its point id across crawls and machines.
POINT_NAMESPACE = uuid.UUID("6f1c4a52-9d1b-4e59-9a43-3f0cbd3c7a11")


class CollectionMismatch(RuntimeError):
    """The existing collection cannot hold this model's vectors."""


def open_client(url: str | None, api_key: str | None, path: str) -> QdrantClient:
    """A server client when ``url`` is set, else embedded local mode on disk at ``path``."""
    if url:
        return QdrantClient(url=url, api_key=api_key or None)
    Path(path).mkdir(parents=True, exist_ok=True)
    return QdrantClient(path=path)


def ensure_collection(
    client: QdrantClient, name: str, vector: str, dimension: int, *, server: bool = False
) -> bool:
    """Create the collection if missing: the dense ``vector`` (cosine) and the ``bm25`` sparse
    vector (Qdrant computes its IDF). True if it was created.

    Raises CollectionMismatch when it exists without a ``vector`` of ``dimension`` values or without
    the sparse vector.
    """
    if not client.collection_exists(name):
        client.create_collection(
            name,
            vectors_config={vector: models.VectorParams(size=dimension, distance=models.Distance.COSINE)},
            sparse_vectors_config={SPARSE_VECTOR: models.SparseVectorParams(modifier=models.Modifier.IDF)},
        )
        if server:
            # Re-crawls delete a page's stale chunks by URL; a server needs the index to do it fast
            # (local mode has no payload indexes and says so in a warning).
            client.create_payload_index(name, "metadata.source_url", models.PayloadSchemaType.KEYWORD)
        return True
    params_all = client.get_collection(name).config.params
    check_sparse_encoding(name, params_all.sparse_vectors)
    vectors = params_all.vectors
    params = vectors.get(vector) if isinstance(vectors, dict) else None
    if params is None:
        have = ", ".join(f"{k} ({v.size})" for k, v in vectors.items()) if isinstance(vectors, dict) else str(vectors)
        raise CollectionMismatch(
            f"collection {name!r} has no vector named {vector!r} (it has: {have}); "
            "use another collection or the model it was built with"
        )
    if params.size != dimension:
        raise CollectionMismatch(
            f"collection {name!r} stores {params.size}-dimensional {vector!r} vectors but the "
            f"model makes {dimension}-dimensional ones; use another collection or delete this one"
        )
    return False


def check_sparse_encoding(name: str, sparse_vectors: dict[str, Any] | None) -> None:
    """Raise CollectionMismatch unless the collection's sparse vector is this Harvester's encoding."""
    have = set(sparse_vectors or {})
    if SPARSE_VECTOR in have:
        return
    old = sorted(have & OLD_SPARSE_VECTORS.keys())
    if old:
        raise CollectionMismatch(
            f"collection {name!r} was indexed with an older lexical encoding ({old[0]!r}: "
            f"{OLD_SPARSE_VECTORS[old[0]]}); its terms do not match today's queries. Re-crawl into a new "
            "collection (HARVESTER_QDRANT_COLLECTION) or delete this one and crawl again"
        )
    raise CollectionMismatch(
        f"collection {name!r} has no {SPARSE_VECTOR!r} sparse vector for lexical search "
        "(another program made it); use another collection or delete this one"
    )


def point_id(url: str, index: int) -> str:
    """The deterministic point id of chunk ``index`` of the page at ``url``."""
    return str(uuid.uuid5(POINT_NAMESPACE, f"{url}#{index}"))


def chunk_point_id(url: str, text: str, occurrence: int = 0) -> str:
    """The point id of a chunk of the page at ``url`` whose embedded text is ``text``.

    Derived from the text, not the chunk's position, so a re-crawl keeps the ids (and the vectors)
    of the chunks that did not change when text is inserted above them; ``occurrence`` tells apart
    the same text repeated on one page.
    """
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    suffix = f"#{occurrence}" if occurrence else ""
    return str(uuid.uuid5(POINT_NAMESPACE, f"{url}#text:{digest}{suffix}"))


def page_points_filter(url: str) -> models.Filter:
    """Every point of the page at ``url``."""
    return models.Filter(
        must=[models.FieldCondition(key="metadata.source_url", match=models.MatchValue(value=url))]
    )


def stale_chunks_filter(url: str, keep_ids: Sequence[str]) -> models.Filter:
    """The points of ``url`` that are not among ``keep_ids``."""
    return models.Filter(
        must=[models.FieldCondition(key="metadata.source_url", match=models.MatchValue(value=url))],
        must_not=[models.HasIdCondition(has_id=list(keep_ids))] if keep_ids else None,
    )


def chunk_vectors(dense_name: str, dense: Any, text: str) -> dict[str, Any]:
    """The named vectors of one point: dense from the model (a sequence or a numpy row), sparse
    from the text."""
    indices, values = document_vector(text)
    dense_list = dense.tolist() if hasattr(dense, "tolist") else list(dense)
    return {dense_name: dense_list, SPARSE_VECTOR: models.SparseVector(indices=indices, values=values)}


def chunk_payload(page: Any, chunk: dict[str, Any], harvested_at: str) -> dict[str, Any]:
    """The payload of one chunk's point: ``page_content`` + ``metadata``, as RAG frameworks read it."""
    return {
        "page_content": chunk["text"],
        "metadata": {
            "source_type": page.source_type,
            "source_url": page.url,
            "domain": page.domain,
            "title": page.title,
            "section": page.section,
            "breadcrumbs": page.breadcrumbs,
            "headings": list(chunk["heading_path"]),
            "heading_path": " > ".join(chunk["heading_path"]),
            "context": chunk.get("context", ""),
            "chunk_id": chunk["id"],
            "chunk_index": chunk["index"],
            "total_chunks": len(page.chunks),
            "token_count": chunk["token_count"],
            "content_hash": page.content_hash,
            "etag": page.etag,
            "last_modified": page.last_modified,
            "harvested_at": harvested_at,
            "aliases": list(getattr(page, "aliases", None) or ()),
            "near_duplicate_of": getattr(page, "near_duplicate_of", None),
            "boilerplate": bool(chunk.get("boilerplate")),
        },
    }


def boilerplate_point_id(text: str) -> str:
    """The point id of a boilerplate chunk: from its text alone (whitespace collapsed), so the one
    stored copy is the same point whichever page carried it first, in this crawl and the next."""
    digest = hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()
    return str(uuid.uuid5(POINT_NAMESPACE, f"boilerplate:{digest}"))


def set_page_aliases(client: QdrantClient, collection: str, url: str, aliases: Sequence[str]) -> None:
    """Write ``metadata.aliases`` on every point of the page at ``url``."""
    client.set_payload(
        collection,
        payload={"aliases": list(aliases)},
        key="metadata",
        points=models.Filter(must=[models.FieldCondition(key="metadata.source_url",
                                                         match=models.MatchValue(value=url))]),
        wait=True,
    )


def delete_points(client: QdrantClient, collection: str, ids: Sequence[str]) -> None:
    """Delete the points ``ids`` (missing ones are ignored)."""
    if ids:
        client.delete(collection, points_selector=models.PointIdsList(points=list(ids)), wait=True)
