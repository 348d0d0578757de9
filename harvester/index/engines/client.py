"""The store on a ``QdrantClient``: a Qdrant server (``QDRANT_URL``) or qdrant-client's local mode.

Local mode is what LangChain and LlamaIndex open without a server, so it stays an engine (and an
export target) even though Qdrant's in-process engine is faster at every size (docs/storage.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from qdrant_client import models

from harvester.index.store import (
    DATE_KEYS,
    MODIFIED_KEY,
    PUBLISHED_KEY,
    SPARSE_VECTOR,
    Candidate,
    Point,
    Query,
    Record,
    Scope,
    ensure_collection,
)


def client_filter(scope: Scope | None) -> models.Filter | None:
    """The Qdrant filter of ``scope`` (None when it covers every point)."""
    if scope is None or scope.empty:
        return None
    must: list[Any] = [models.FieldCondition(key=key, match=models.MatchValue(value=value))
                       for key, value in scope.matches()]
    must += [models.FieldCondition(key=key, match=models.MatchPrefix(prefix=prefix))
             for key, prefix in scope.prefixes()]
    if scope.dated:
        def dated(key: str) -> models.FieldCondition:
            return models.FieldCondition(key=key, range=models.DatetimeRange(gte=scope.since, lte=scope.until))
        must.append(models.Filter(should=[dated(PUBLISHED_KEY), models.Filter(must=[
            models.IsEmptyCondition(is_empty=models.PayloadField(key=PUBLISHED_KEY)), dated(MODIFIED_KEY)])]))
    must_not = [models.HasIdCondition(has_id=list(scope.exclude_ids))] if scope.exclude_ids else None
    return models.Filter(must=must or None, must_not=must_not)


class ClientStore:
    """The store interface over a ``QdrantClient`` (server or local mode)."""

    def __init__(self, client: Any, *, engine: str = "server", where: str = "") -> None:
        self.client = client
        self.engine = engine
        self.where = where

    def collections(self) -> list[str]:
        return sorted(c.name for c in self.client.get_collections().collections)

    def exists(self, collection: str) -> bool:
        return bool(self.client.collection_exists(collection))

    def ensure_collection(self, collection: str, vector: str, dimension: int) -> bool:
        created = ensure_collection(self.client, collection, vector, dimension, server=self.engine == "server")
        if created and self.engine == "server":
            # Search filters by site, section and date; a server needs the indexes to do it fast.
            for key in ("metadata.domain", "metadata.section", "metadata.versions"):
                self.client.create_payload_index(collection, key, models.PayloadSchemaType.KEYWORD)
            for key in DATE_KEYS:
                self.client.create_payload_index(collection, key, models.PayloadSchemaType.DATETIME)
        return created

    def dense_vectors(self, collection: str) -> dict[str, int]:
        vectors = self.client.get_collection(collection).config.params.vectors
        if isinstance(vectors, dict):
            return {name: params.size for name, params in vectors.items()}
        return {"": vectors.size}

    def sparse_vectors(self, collection: str) -> set[str]:
        return set(self.client.get_collection(collection).config.params.sparse_vectors or {})

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        if points:
            self.client.upsert(collection, points=[models.PointStruct(
                id=p.id, payload=p.payload, vector=_vectors(p)) for p in points], wait=True)

    def overwrite_payloads(self, collection: str, points: Sequence[Point]) -> None:
        if points:
            self.client.batch_update_points(collection, [
                models.OverwritePayloadOperation(overwrite_payload=models.SetPayload(
                    payload=p.payload, points=[p.id])) for p in points], wait=True)

    def set_metadata(self, collection: str, scope: Scope, values: dict[str, Any]) -> None:
        self.client.set_payload(collection, payload=values, key="metadata", points=client_filter(scope),
                                wait=True)

    def delete(self, collection: str, ids: Sequence[str] = (), scope: Scope | None = None) -> None:
        if ids:
            self.client.delete(collection, points_selector=models.PointIdsList(points=list(ids)), wait=True)
        if scope is not None and not scope.empty:
            self.client.delete(collection, points_selector=models.FilterSelector(filter=client_filter(scope)),
                               wait=True)

    def scroll(self, collection: str, scope: Scope | None = None, keys: Sequence[str] | None = None,
               batch: int = 1024) -> Iterator[Record]:
        selector: Any = models.PayloadSelectorInclude(include=list(keys)) if keys is not None else True
        offset = None
        while True:
            points, offset = self.client.scroll(collection, scroll_filter=client_filter(scope), limit=batch,
                                                offset=offset, with_vectors=False, with_payload=selector)
            for point in points:
                yield Record(str(point.id), point.payload or {})
            if offset is None:
                return

    def count(self, collection: str, scope: Scope | None = None) -> int:
        return self.client.count(collection, count_filter=client_filter(scope), exact=True).count

    def points(self, collection: str, batch: int = 256) -> Iterator[Point]:
        """Every point with its vectors (for an export)."""
        offset = None
        while True:
            records, offset = self.client.scroll(collection, limit=batch, offset=offset, with_vectors=True,
                                                 with_payload=True)
            for record in records:
                yield _point(record.id, record.vector, record.payload)
            if offset is None:
                return

    def query(self, collection: str, queries: Sequence[Query]) -> list[list[Candidate]]:
        requests = [models.QueryRequest(
            query=q.dense if q.dense is not None else models.SparseVector(indices=q.sparse[0], values=q.sparse[1]),
            using=q.using if q.dense is not None else SPARSE_VECTOR,
            limit=q.limit, filter=client_filter(q.scope),
            with_payload=models.PayloadSelectorExclude(exclude=list(q.exclude_keys))
            if q.with_payload and q.exclude_keys else q.with_payload,
        ) for q in queries]
        responses = self.client.query_batch_points(collection, requests)
        return [[Candidate(str(p.id), float(p.score), p.payload or {}) for p in r.points] for r in responses]

    def retrieve(self, collection: str, ids: Sequence[str], exclude_keys: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        selector = models.PayloadSelectorExclude(exclude=list(exclude_keys)) if exclude_keys else True
        records = self.client.retrieve(collection, list(ids), with_payload=selector, with_vectors=False)
        return {str(record.id): record.payload or {} for record in records}

    def remember(self, collection: str, keys: Sequence[str]) -> None:
        """Nothing: this engine holds no keys in memory; its queries read payloads (less
        ``exclude_keys``) as before."""

    def close(self) -> None:
        self.client.close()


def _vectors(point: Point) -> dict[str, Any]:
    vectors: dict[str, Any] = {}
    if point.dense is not None:
        vectors[point.using] = point.dense
    if point.sparse is not None:
        vectors[SPARSE_VECTOR] = models.SparseVector(indices=point.sparse[0], values=point.sparse[1])
    return vectors


def _point(point_id: Any, vectors: Any, payload: dict[str, Any] | None) -> Point:
    dense_name, dense, sparse = "", None, None
    for name, value in (vectors or {}).items():
        if name == SPARSE_VECTOR:
            sparse = (list(value.indices), list(value.values))
        else:
            dense_name, dense = name, list(value)
    return Point(id=str(point_id), payload=payload or {}, dense=dense, sparse=sparse, using=dense_name)
