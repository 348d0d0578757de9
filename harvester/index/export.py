"""Copy a collection from one store into another: the embedded engine's collection into a Qdrant
server (``QDRANT_URL``) or into qdrant-client's local mode (which LangChain and LlamaIndex open),
or an old local-mode collection into the embedded engine. Scrapy-free.

The copy mirrors the source: a re-export after a re-crawl also deletes the points the source no
longer holds (pruned or deleted pages, replaced chunks), so the frameworks reading the copy never
answer from a page that is gone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvester.index.store import Point, Store

# The one small payload key a scroll of the target reads: the ids are what matter.
_ID_KEYS = ["metadata.chunk_index"]


@dataclass(frozen=True)
class ExportCounts:
    """What an export did: points written, and stale points deleted from the target."""

    copied: int
    deleted: int


def mirror_collection(
    source: Store, collection: str, target: Store, target_collection: str | None = None,
    batch: int = 256, progress: Callable[[int], None] | None = None,
) -> ExportCounts:
    """Upsert every point of ``collection`` (vectors and payload as stored) into ``target``, under
    ``target_collection`` (default: the same name), creating it with the same vectors, then delete
    the target's points that the source does not hold. Re-running it overwrites the same ids."""
    name = target_collection or collection
    vectors = source.dense_vectors(collection)
    for vector, dimension in vectors.items():
        target.ensure_collection(name, vector, dimension)
    copied = 0
    kept: set[str] = set()
    pending: list[Point] = []
    for point in source.points(collection, batch=batch):
        pending.append(point)
        kept.add(point.id)
        if len(pending) >= batch:
            target.upsert(name, pending)
            copied += len(pending)
            pending = []
            if progress is not None:
                progress(copied)
    if pending:
        target.upsert(name, pending)
        copied += len(pending)
    # After the upserts, so a reader of the copy meanwhile finds every current point.
    stale = [record.id for record in target.scroll(name, keys=_ID_KEYS) if record.id not in kept]
    for start in range(0, len(stale), batch):
        target.delete(name, stale[start:start + batch])
    return ExportCounts(copied, len(stale))
