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

from qdrant_client import models

from harvester.index.lexical import query_vector
from harvester.index.store import SPARSE_VECTOR

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
    elif tuning.fusion != "rrf":
        return collapse(_score_fusion(client, collection, embedder.vector_name, dense, sparse, tuning)[:limit], k)
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


def _score_fusion(
    client: QdrantClient, collection: str, using: str, dense: list[float], sparse: models.SparseVector,
    tuning: SearchTuning,
) -> list[dict[str, Any]]:
    """Both candidate lists in one call, fused by weighted normalised scores."""
    if tuning.fusion not in FUSIONS:
        raise ValueError(f"unknown fusion {tuning.fusion!r}: one of {FUSIONS}")
    dense_side, sparse_side = client.query_batch_points(collection, [
        models.QueryRequest(query=dense, using=using, limit=tuning.depth, with_payload=True),
        models.QueryRequest(query=sparse, using=SPARSE_VECTOR, limit=tuning.depth, with_payload=True),
    ])
    fused: dict[Any, float] = {}
    payloads: dict[Any, dict[str, Any]] = {}
    for points, weight in ((dense_side.points, tuning.dense_weight), (sparse_side.points, tuning.sparse_weight)):
        for point, score in zip(points, _normalised([p.score for p in points], tuning.fusion), strict=True):
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
