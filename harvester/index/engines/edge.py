"""The embedded store on Qdrant's in-process engine (qdrant-edge): one shard folder per collection
under ``<HARVESTER_QDRANT_PATH>/edge/``.

Chosen by measurement over qdrant-client's local mode (bench/bench_engines.py, docs/storage.md):
the server's own storage engine, so writes, reopening and hybrid queries stay fast at tens of
thousands of chunks. Its folder lock is shared with other processes through ``Lease``: a crawl and
a search or MCP server take turns, each holding the shard only while it uses it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as edge

from harvester.config.spec import SETTINGS
from harvester.index.engines.compaction import (
    Compaction,
    dead_share,
    disk_usage,
    read_writes,
    rebuild,
    recover,
    swap_into_place,
    write_writes,
)
from harvester.index.engines.lease import Lease, LeaseTimeout
from harvester.index.store import (
    DATE_KEYS,
    MODIFIED_KEY,
    PUBLISHED_KEY,
    SPARSE_VECTOR,
    Candidate,
    CollectionMismatch,
    Point,
    Query,
    Record,
    Scope,
    StoreUnavailable,
    check_sparse_encoding,
)

logger = logging.getLogger(__name__)

CONFIG_FILE = "edge_config.json"
# Filtered deletes (re-crawls) and search filters (site, section) use these; dates get Datetime indexes.
INDEXED_KEYS = ("metadata.source_url", "metadata.domain", "metadata.section", "metadata.versions")
# How long an operation waits for another process to give the folder up, unless told.
DEFAULT_WAIT: float = SETTINGS["HARVESTER_QDRANT_WAIT"].default
# How often an idle holder checks whether another process is waiting for the folder.
YIELD_CHECK = 0.1
# New collections store dense vectors as 16-bit floats: half the memory and disk, and the exact
# scan (most of a warm query's store time) in about 70% of the time, for the same R@5 and MRR on
# every question set (bench_vector_datatype.py).
DENSE_DATATYPE = edge.VectorStorageDatatype.Float16
# A collection of more points is not remembered (``EdgeStore.remember``; 130 to 180 bytes a
# point on a docs site, where a page's chunks share one copy): its queries read payloads as others do.
REMEMBER_MAX_POINTS = 500_000


def edge_root(path: str | Path) -> Path:
    return Path(path) / "edge"


def edge_collections(path: str | Path) -> list[str]:
    """The collections of the embedded store at ``path`` (shard folders with a config)."""
    root = edge_root(path)
    if not root.is_dir():
        return []
    return sorted(d.name for d in root.iterdir() if not d.name.startswith(".") and (d / CONFIG_FILE).is_file())


def edge_filter(scope: Scope | None) -> edge.Filter | None:
    if scope is None or scope.empty:
        return None
    must: list[Any] = [edge.FieldCondition(key=key, match=edge.MatchValue(value)) for key, value in scope.matches()]
    must += [edge.FieldCondition(key=key, match=edge.MatchPrefix(prefix)) for key, prefix in scope.prefixes()]
    if scope.dated:
        def dated(key: str) -> edge.FieldCondition:
            return edge.FieldCondition(key=key, range=edge.RangeDateTime(gte=scope.since, lte=scope.until))
        must.append(edge.Filter(should=[dated(PUBLISHED_KEY), edge.Filter(must=[
            edge.IsEmptyCondition(PUBLISHED_KEY), dated(MODIFIED_KEY)])]))
    must_not = [edge.HasIdCondition(set(scope.exclude_ids))] if scope.exclude_ids else None
    return edge.Filter(must=must or None, must_not=must_not)


class EdgeStore:
    """The store interface over qdrant-edge shards, one per collection, opened when first used.

    Thread-safe (one lock around every shard call). ``wait`` is how long an operation waits for
    another process to give the folder up.
    """

    engine = "edge"

    def __init__(self, path: str | Path, wait: float = DEFAULT_WAIT) -> None:
        self.path = Path(path)
        self.root = edge_root(path)
        self.where = str(self.root)
        self._wait = wait
        self._lock = threading.RLock()
        self._shards: dict[str, Any] = {}
        self._leases: dict[str, Lease] = {}
        # Point writes (upserts, payload rewrites, deletions) each open shard holds since it was built.
        self._writes: dict[str, int] = {}
        # Remembered payload keys per collection (``remember``): the keys, and the points' values
        # read so far from the open shard.
        self._remembered: dict[str, Remembered] = {}
        # Per collection, how many times its shard was opened or written: values read across a
        # change are not kept.
        self._changes: dict[str, int] = {}
        self._closed = threading.Event()
        self._yielder = threading.Thread(target=self._yield_when_wanted, name="harvester-edge-lease",
                                         daemon=True)
        self._yielder.start()

    # -- shards and turns -------------------------------------------------------------------------

    def _dir(self, collection: str) -> Path:
        if not collection or "/" in collection or collection.startswith("."):
            raise ValueError(f"bad collection name {collection!r}")
        return self.root / collection

    def _shard(self, collection: str) -> Any:
        """The open shard of ``collection`` (the caller holds ``self._lock``)."""
        shard = self._shards.get(collection)
        if shard is not None:
            return shard
        if self._closed.is_set():  # a thread still at work (``remember``) must not take the folder again
            raise StoreUnavailable(f"the store at {self.root} is closed")
        folder = self._dir(collection)
        if not (folder / CONFIG_FILE).is_file():
            raise StoreUnavailable(f"no collection {collection!r} at {self.root}")
        lease = self._lease(collection)
        try:
            lease.acquire()
        except LeaseTimeout as exc:
            raise StoreUnavailable(str(exc)) from exc
        try:
            recover(folder)
            shard = self._shards[collection] = edge.EdgeShard.load(str(folder))
        except Exception:
            lease.release()
            raise
        self._forget_values(collection)  # another process may have written while the folder was not ours
        writes = read_writes(folder)
        # A shard from before the count was kept: counted from now, as if it had been written once.
        self._writes[collection] = writes if writes is not None else shard.count(edge.CountRequest(exact=True))
        return shard

    def _lease(self, collection: str) -> Lease:
        lease = self._leases.get(collection)
        if lease is None:
            lease = self._leases[collection] = Lease(self._dir(collection), self._wait)
        return lease

    def _give_up(self, collection: str) -> None:
        shard = self._shards.pop(collection, None)
        if shard is not None:
            shard.close()  # flushes
        self._leases[collection].release()

    def _wrote(self, collection: str, points: int) -> None:
        """Count ``points`` written to the open shard of ``collection`` (the caller holds the lock)."""
        if points:
            self._writes[collection] = self._writes.get(collection, 0) + points
            write_writes(self._dir(collection), self._writes[collection])
            self._forget_values(collection)

    def _forget_values(self, collection: str) -> None:
        """Drop the remembered values of ``collection``: read again as queries meet the points."""
        self._changes[collection] = self._changes.get(collection, 0) + 1
        remembered = self._remembered.get(collection)
        if remembered is not None:
            remembered.clear()

    def _after(self, collection: str) -> None:
        """After an operation: hand the folder over if another process waits for it."""
        lease = self._leases.get(collection)
        if lease is not None and lease.contended():
            self._give_up(collection)

    def _yield_when_wanted(self) -> None:
        while not self._closed.wait(YIELD_CHECK):
            if not self._lock.acquire(blocking=False):
                continue  # busy: the operation hands over when it ends
            try:
                for collection in list(self._shards):
                    self._after(collection)
            except Exception:  # never let the watcher die; the next operation retries
                logger.exception("Could not hand the embedded store over")
            finally:
                self._lock.release()

    def _run(self, collection: str, fn: Any) -> Any:
        with self._lock:
            try:
                return fn(self._shard(collection))
            finally:
                if collection in self._shards:
                    self._after(collection)

    # -- the store interface ----------------------------------------------------------------------

    def collections(self) -> list[str]:
        return edge_collections(self.path)

    def exists(self, collection: str) -> bool:
        return (self._dir(collection) / CONFIG_FILE).is_file()

    def config(self, collection: str) -> dict[str, Any]:
        return json.loads((self._dir(collection) / CONFIG_FILE).read_text(encoding="utf-8"))

    def dense_vectors(self, collection: str) -> dict[str, int]:
        return {name: params["size"] for name, params in (self.config(collection).get("vectors") or {}).items()}

    def sparse_vectors(self, collection: str) -> set[str]:
        return set(self.config(collection).get("sparse_vectors") or {})

    def ensure_collection(self, collection: str, vector: str, dimension: int) -> bool:
        """Create the shard if missing (the dense ``vector``, cosine; the ``bm25-en`` sparse vector
        with Qdrant's IDF; keyword indexes for filters). True if it was created. Raises
        CollectionMismatch when it exists with other vectors."""
        with self._lock:
            if not self.exists(collection):
                lease = self._lease(collection)
                try:
                    lease.acquire()
                except LeaseTimeout as exc:
                    raise StoreUnavailable(str(exc)) from exc
                recover(self._dir(collection))  # a compaction cut short between its renames
                if not self.exists(collection):  # another process may have made it meanwhile
                    config = edge.EdgeConfig(
                        vectors={vector: edge.EdgeVectorParams(size=dimension, distance=edge.Distance.Cosine,
                                                               datatype=DENSE_DATATYPE)},
                        sparse_vectors={SPARSE_VECTOR: edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf)},
                    )
                    shard = edge.EdgeShard.create(str(self._dir(collection)), config)
                    for key in INDEXED_KEYS:
                        shard.update(edge.UpdateOperation.create_field_index(key, edge.PayloadSchemaType.Keyword))
                    for key in DATE_KEYS:
                        shard.update(edge.UpdateOperation.create_field_index(key, edge.PayloadSchemaType.Datetime))
                    shard.flush()
                    self._shards[collection] = shard
                    self._writes[collection] = 0
                    return True
                lease.release()
        config = self.config(collection)
        check_sparse_encoding(collection, config.get("sparse_vectors"))
        vectors = self.dense_vectors(collection)
        if vector not in vectors:
            have = ", ".join(f"{k} ({v})" for k, v in vectors.items())
            raise CollectionMismatch(
                f"collection {collection!r} has no vector named {vector!r} (it has: {have}); "
                "use another collection or the model it was built with")
        if vectors[vector] != dimension:
            raise CollectionMismatch(
                f"collection {collection!r} stores {vectors[vector]}-dimensional {vector!r} vectors but "
                f"the model makes {dimension}-dimensional ones; use another collection or delete this one")
        return False

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        def write(shard: Any) -> None:
            shard.update(edge.UpdateOperation.upsert_points(batch))
            self._wrote(collection, len(batch))
        if points:
            batch = [edge.Point(p.id, _vectors(p), p.payload) for p in points]
            self._run(collection, write)

    def overwrite_payloads(self, collection: str, points: Sequence[Point]) -> None:
        def write(shard: Any) -> None:
            for p in points:
                shard.update(edge.UpdateOperation.overwrite_payload([p.id], p.payload))
            self._wrote(collection, len(points))
        if points:
            self._run(collection, write)

    def set_metadata(self, collection: str, scope: Scope, values: dict[str, Any]) -> None:
        def write(shard: Any) -> None:
            changed = shard.count(edge.CountRequest(exact=True, filter=edge_filter(scope)))
            shard.update(edge.UpdateOperation.set_payload_by_filter(edge_filter(scope), values, "metadata"))
            self._wrote(collection, changed)
        self._run(collection, write)

    def delete(self, collection: str, ids: Sequence[str] = (), scope: Scope | None = None) -> None:
        def remove(shard: Any) -> None:
            if ids:
                shard.update(edge.UpdateOperation.delete_points(list(ids)))
                self._wrote(collection, len(ids))
            if scope is not None and not scope.empty:
                matched = shard.count(edge.CountRequest(exact=True, filter=edge_filter(scope)))
                if matched:
                    shard.update(edge.UpdateOperation.delete_points_by_filter(edge_filter(scope)))
                    self._wrote(collection, matched)
        self._run(collection, remove)

    def scroll(self, collection: str, scope: Scope | None = None, keys: Sequence[str] | None = None,
               batch: int = 1024) -> Iterator[Record]:
        selector: Any = edge.PayloadSelector.Include(list(keys)) if keys is not None else True
        offset = None
        while True:
            request = edge.ScrollRequest(offset=offset, limit=batch, filter=edge_filter(scope),
                                         with_payload=selector, with_vector=False)
            records, offset = self._run(collection, lambda s, r=request: s.scroll(r))
            for record in records:
                yield Record(str(record.id), record.payload or {})
            if offset is None:
                return

    def count(self, collection: str, scope: Scope | None = None) -> int:
        return self._run(collection, lambda s: s.count(edge.CountRequest(exact=True, filter=edge_filter(scope))))

    def points(self, collection: str, batch: int = 256) -> Iterator[Point]:
        """Every point with its vectors (for an export)."""
        offset = None
        while True:
            request = edge.ScrollRequest(offset=offset, limit=batch, with_payload=True, with_vector=True)
            records, offset = self._run(collection, lambda s, r=request: s.scroll(r))
            for record in records:
                dense_name, dense, sparse = "", None, None
                for name, value in (record.vector or {}).items():
                    if name == SPARSE_VECTOR:
                        sparse = (list(value.indices), list(value.values))
                    else:
                        dense_name, dense = name, list(value)
                yield Point(str(record.id), record.payload or {}, dense, sparse, dense_name)
            if offset is None:
                return

    def query(self, collection: str, queries: Sequence[Query]) -> list[list[Candidate]]:
        with self._lock:
            remembered = self._remembered.get(collection)
            if remembered is not None and all(
                    q.with_payload and q.keys is not None and set(q.keys) <= set(remembered.keys) for q in queries):
                return self._query_remembered(collection, queries, remembered)
        requests = [_request(q, q.with_payload) for q in queries]
        return [[Candidate(str(p.id), float(p.score), p.payload or {}) for p in points]
                for points in self._query(collection, requests)]

    def _query(self, collection: str, requests: list[Any]) -> list[list[Any]]:
        if len(requests) == 1:
            return [self._run(collection, lambda s: s.query(requests[0]))]
        return self._run(collection, lambda s: s.query_batch(edge.QueryBatchRequest(requests)))

    def _query_remembered(self, collection: str, queries: Sequence[Query],
                          remembered: Remembered) -> list[list[Candidate]]:
        """``queries`` answered without payloads, their keys from memory: qdrant-edge reads a
        point's whole payload even to pick keys out of it, most of a warm search's time in the
        store. Points not yet remembered are read, for those keys, in one request."""
        results = self._query(collection, [_request(q, False) for q in queries])
        ids = {str(p.id) for points in results for p in points}
        # Taken now: reading the missing ones may open the shard again, which drops the values.
        found = {point_id: remembered.values[point_id] for point_id in ids if point_id in remembered.values}
        missing = list(ids - found.keys())
        if missing:
            selector = edge.PayloadSelector.Include(list(remembered.keys))
            records = self._run(collection, lambda s: s.retrieve(missing, selector, False))
            for record in records:
                found[str(record.id)] = remembered.add(str(record.id), record.payload or {})
        return [[Candidate(str(p.id), float(p.score), found.get(str(p.id), {})) for p in points]
                for points in results]

    def retrieve(self, collection: str, ids: Sequence[str], exclude_keys: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        selector = edge.PayloadSelector.Exclude(list(exclude_keys)) if exclude_keys else True
        records = self._run(collection, lambda s: s.retrieve(list(ids), selector, False))
        return {str(record.id): record.payload or {} for record in records}

    def remember(self, collection: str, keys: Sequence[str]) -> None:
        """Read ``keys`` of every point of ``collection`` and hold them while its shard stays open
        and unwritten; after a write (here, or by another process before the shard is opened
        again) each point is read again when a query first meets it. Queries go on meanwhile (the
        store is held batch by batch), on payloads until the values are in. Not for a collection
        of more than ``REMEMBER_MAX_POINTS`` points."""
        points = self.count(collection)
        if points > REMEMBER_MAX_POINTS:
            logger.info("Not remembering %r's %s: %d points, over %d", collection, ", ".join(keys), points,
                        REMEMBER_MAX_POINTS)
            return
        started = time.perf_counter()
        with self._lock:
            before = self._changes.get(collection, 0)
        remembered = Remembered(tuple(keys))
        for record in self.scroll(collection, keys=keys):
            remembered.add(record.id, record.payload)
        with self._lock:
            if self._changes.get(collection, 0) != before:
                remembered.clear()  # written or opened again while read: read point by point instead
            self._remembered[collection] = remembered
        logger.info("Holding %s of %d points of %r in memory (read in %.2f s)", ", ".join(keys),
                    len(remembered.values), collection, time.perf_counter() - started)

    def dead_share(self, collection: str) -> float:
        """The share of the point writes ``collection``'s shard keeps on disk that are overwritten or
        deleted since it was built (``harvester.index.engines.compaction``)."""
        with self._lock:
            live = self._run(collection, lambda s: s.count(edge.CountRequest(exact=True)))
            return dead_share(live, self._writes.get(collection, 0))

    def compact(self, collection: str, threshold: float | None = None) -> Compaction | None:
        """Rebuild ``collection``'s shard with its live points only, when the dead share reaches
        ``threshold`` (always when None); None when it did not. Holds the folder for the whole
        rebuild: another process waits for it as for any other operation."""
        with self._lock:
            shard = self._shard(collection)
            folder = self._dir(collection)
            share = dead_share(shard.count(edge.CountRequest(exact=True)), self._writes.get(collection, 0))
            if threshold is not None and (share <= 0 or share < threshold):
                self._after(collection)
                return None
            started = time.perf_counter()
            shard.flush()
            before = disk_usage(folder)
            built, points = rebuild(shard, folder)
            self._shards.pop(collection)
            shard.close()
            try:
                swap_into_place(built, folder)
            finally:
                self._leases[collection].release()
            self._writes[collection] = points
            done = Compaction(collection, points, share, before, disk_usage(folder), time.perf_counter() - started)
        logger.info("Compacted %r: %d points, %.1f MB -> %.1f MB in %.2f s", collection, points,
                    done.bytes_before / 1e6, done.bytes_after / 1e6, done.seconds)
        return done

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            self._remembered.clear()
            for collection in list(self._shards):
                self._give_up(collection)
            for lease in self._leases.values():
                lease.release()


class Remembered:
    """The payload ``keys`` a store holds in memory for a collection (``EdgeStore.remember``): each
    point's values, as one shared dict per distinct set of values (a page's chunks have the same
    URL, length and versions), which callers must not change."""

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = keys
        self.values: dict[str, dict[str, Any]] = {}
        self._distinct: dict[str, dict[str, Any]] = {}

    def add(self, point_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        shared = self._distinct.setdefault(json.dumps(payload, sort_keys=True, default=str), payload)
        self.values[point_id] = shared
        return shared

    def clear(self) -> None:
        self.values.clear()
        self._distinct.clear()


def _request(query: Query, with_payload: bool) -> Any:
    return edge.QueryRequest(
        limit=query.limit,
        query=edge.Query.Nearest(query.dense, using=query.using) if query.dense is not None
        else edge.Query.Nearest(edge.SparseVector(query.sparse[0], query.sparse[1]), using=SPARSE_VECTOR),
        filter=edge_filter(query.scope), with_vector=False,
        with_payload=edge.PayloadSelector.Exclude(list(query.exclude_keys)) if with_payload and query.exclude_keys
        else with_payload,
    )


def _vectors(point: Point) -> dict[str, Any]:
    vectors: dict[str, Any] = {}
    if point.dense is not None:
        vectors[point.using] = point.dense
    if point.sparse is not None:
        vectors[SPARSE_VECTOR] = edge.SparseVector(point.sparse[0], point.sparse[1])
    return vectors
