"""Searching the collection: dense (the model), sparse (BM25) or both fused. Scrapy-free.

Hybrid is the default. Plain reciprocal rank fusion (k=60) loses to the better single mode on
query sets where one side is much stronger (documentation queries reward exact words): a small
k lets each side's top hits dominate, so a chunk that one side ranks first stays near the top.
The defaults were tuned on the public corpora (see bench/README.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from qdrant_client import models

from harvester.content.lexical import query_vector
from harvester.store import SPARSE_VECTOR

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

    from harvester.embedding import Embedder

MODES = ("hybrid", "dense", "sparse")


@dataclass(frozen=True)
class SearchTuning:
    """Candidates fetched per side, and the RRF weights and constant of the fusion."""

    depth: int = 20
    dense_weight: float = 1.0
    sparse_weight: float = 1.0
    rrf_k: int = 10


def search(
    client: QdrantClient, collection: str, embedder: Embedder, query: str, k: int,
    mode: str = "hybrid", tuning: SearchTuning = SearchTuning(),
) -> list[dict[str, Any]]:
    """The top ``k`` chunks for ``query``, best first, identical texts collapsed into the first."""
    if mode not in MODES:
        raise ValueError(f"unknown search mode {mode!r}: one of {MODES}")
    # Fetch extra so that collapsing repeated texts (boilerplate) still leaves k results.
    limit = k * 3
    dense = embedder.encode([query], batch_size=1)[0].tolist() if mode != "sparse" else None
    indices, values = query_vector(query)
    sparse = models.SparseVector(indices=indices, values=values)
    if mode == "dense":
        response = client.query_points(collection, query=dense, using=embedder.vector_name,
                                       limit=limit, with_payload=True)
    elif mode == "sparse":
        response = client.query_points(collection, query=sparse, using=SPARSE_VECTOR,
                                       limit=limit, with_payload=True)
    else:
        response = client.query_points(
            collection,
            prefetch=[
                models.Prefetch(query=dense, using=embedder.vector_name, limit=tuning.depth),
                models.Prefetch(query=sparse, using=SPARSE_VECTOR, limit=tuning.depth),
            ],
            query=models.RrfQuery(rrf=models.Rrf(
                k=tuning.rrf_k, weights=[tuning.dense_weight, tuning.sparse_weight])),
            limit=limit, with_payload=True,
        )
    return collapse([hit(p.payload or {}, p.score) for p in response.points], k)


def collapse(hits: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """The first ``k`` hits with distinct texts; later copies are counted on the first."""
    kept: dict[str, dict[str, Any]] = {}
    for result in hits:
        key = " ".join(result["text"].split())
        if key in kept:
            kept[key]["duplicates"] += 1
        elif len(kept) < k:
            kept[key] = result
    return list(kept.values())


def hit(payload: dict[str, Any], score: float) -> dict[str, Any]:
    """One result as ``scrapy search --json`` prints it."""
    metadata = payload.get("metadata", {})
    return {
        "url": metadata.get("source_url"),
        "title": metadata.get("title"),
        "score": round(float(score), 4),
        "heading_path": metadata.get("headings", []),
        "chunk_index": metadata.get("chunk_index"),
        "text": payload.get("page_content", ""),
        "duplicates": 0,
    }
