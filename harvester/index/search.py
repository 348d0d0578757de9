"""Searching the collection: dense (the model), sparse (BM25) or both fused. Scrapy-free.

Hybrid is the default. Plain reciprocal rank fusion (k=60) loses to the better single mode on
query sets where one side is much stronger (documentation queries reward exact words). Ranks
throw away how sure each side is; fusing the scores, each side's normalised to [0, 1] over its
candidates and the lexical side weighted 1.5, keeps a confident BM25 hit on top while dense
similarity reorders the close calls. The defaults were tuned on the public corpora, with every
setting tried recorded in bench/README.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvester.index.engines import as_store
from harvester.index.lexical import query_vector
from harvester.index.store import Candidate, Query, Scope, Store

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

    from harvester.embedding.models import Embedder

MODES = ("hybrid", "dense", "sparse")


FUSIONS = ("rrf", "minmax", "dbsf")


@dataclass(frozen=True)
class SearchTuning:
    """Candidates fetched per side, and how the two lists are fused: weighted reciprocal rank
    fusion (Qdrant's, constant ``rrf_k``), or a weighted sum of each side's scores normalised over
    its candidates (``minmax``: to [0, 1]; ``dbsf``: mean +- 3 standard deviations, as Qdrant's
    distribution-based score fusion, which has no weights)."""

    depth: int = 20
    dense_weight: float = 1.0
    sparse_weight: float = 1.5
    rrf_k: int = 10
    fusion: str = "minmax"


def search(
    client: Store | QdrantClient, collection: str, embedder: Embedder, query: str, k: int,
    mode: str = "hybrid", tuning: SearchTuning = SearchTuning(), *, scope: Scope | None = None,
) -> list[dict[str, Any]]:
    """The top ``k`` chunks for ``query``, best first, identical texts collapsed into the first.

    ``client`` is a store (``harvester.index.engines.open_store``) or a ``QdrantClient``;
    ``scope`` narrows the search (site, URL prefix, section).
    """
    if mode not in MODES:
        raise ValueError(f"unknown search mode {mode!r}: one of {MODES}")
    store = as_store(client)
    # Fetch extra so that collapsing repeated texts (boilerplate) still leaves k results.
    limit = k * 3
    dense = embedder.encode([query], batch_size=1)[0].tolist() if mode != "sparse" else None
    sparse = query_vector(query)
    if mode == "dense":
        (found,) = store.query(collection, [Query(limit, using=embedder.vector_name, dense=dense, scope=scope)])
    elif mode == "sparse":
        (found,) = store.query(collection, [Query(limit, sparse=sparse, scope=scope)])
    else:
        return collapse(_score_fusion(store, collection, embedder.vector_name, dense, sparse, tuning,
                                      scope=scope)[:limit], k)
    return collapse([hit(c.payload, c.score) for c in found], k)


def _candidates(
    store: Store, collection: str, using: str, dense: list[float], sparse: Any, depth: int,
    scope: Scope | None = None,
) -> tuple[list[Candidate], list[Candidate]]:
    """The dense and the sparse candidate lists, in one call to the store."""
    if hasattr(sparse, "indices"):  # a qdrant-client SparseVector
        sparse = (list(sparse.indices), list(sparse.values))
    dense_side, sparse_side = store.query(collection, [
        Query(depth, using=using, dense=dense, scope=scope),
        Query(depth, sparse=sparse, scope=scope),
    ])
    return dense_side, sparse_side


def _score_fusion(
    client: Store | QdrantClient, collection: str, using: str, dense: list[float], sparse: Any,
    tuning: SearchTuning, *, scope: Scope | None = None,
) -> list[dict[str, Any]]:
    """Both candidate lists in one call, fused by weighted reciprocal ranks or normalised scores."""
    if tuning.fusion not in FUSIONS:
        raise ValueError(f"unknown fusion {tuning.fusion!r}: one of {FUSIONS}")
    dense_side, sparse_side = _candidates(as_store(client), collection, using, dense, sparse, tuning.depth, scope)
    fused: dict[Any, float] = {}
    payloads: dict[Any, dict[str, Any]] = {}
    for points, weight in ((dense_side, tuning.dense_weight), (sparse_side, tuning.sparse_weight)):
        if tuning.fusion == "rrf":
            scores = [1.0 / (tuning.rrf_k + rank) for rank in range(1, len(points) + 1)]
        else:
            scores = _normalised([p.score for p in points], tuning.fusion)
        for point, score in zip(points, scores, strict=True):
            fused[point.id] = fused.get(point.id, 0.0) + weight * score
            payloads[point.id] = point.payload or {}
    ranked = sorted(fused, key=fused.__getitem__, reverse=True)
    return [hit(payloads[point_id], fused[point_id]) for point_id in ranked]


def _normalised(scores: list[float], fusion: str) -> list[float]:
    if not scores:
        return []
    if fusion == "minmax":
        low, high = min(scores), max(scores)
    else:
        mean = sum(scores) / len(scores)
        spread = 3 * (sum((s - mean) ** 2 for s in scores) / len(scores)) ** 0.5
        low, high = mean - spread, mean + spread
    span = (high - low) or 1.0
    return [(score - low) / span for score in scores]


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
