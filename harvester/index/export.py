"""Copy a collection from one store into another: the embedded engine's collection into a Qdrant
server (``QDRANT_URL``) or into qdrant-client's local mode (which LangChain and LlamaIndex open),
or an old local-mode collection into the embedded engine. Scrapy-free."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvester.index.store import Point, Store


def export_collection(
    source: Store, collection: str, target: Store, target_collection: str | None = None,
    batch: int = 256, progress: Callable[[int], None] | None = None,
) -> int:
    """Upsert every point of ``collection`` (vectors and payload as stored) into ``target``, under
    ``target_collection`` (default: the same name), creating it with the same vectors. Returns the
    number of points copied. Re-running it overwrites the same ids."""
    name = target_collection or collection
    vectors = source.dense_vectors(collection)
    for vector, dimension in vectors.items():
        target.ensure_collection(name, vector, dimension)
    copied = 0
    pending: list[Point] = []
    for point in source.points(collection, batch=batch):
        pending.append(point)
        if len(pending) >= batch:
            target.upsert(name, pending)
            copied += len(pending)
            pending = []
            if progress is not None:
                progress(copied)
    if pending:
        target.upsert(name, pending)
        copied += len(pending)
    return copied
