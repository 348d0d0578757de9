"""Giving back the space of deleted and rewritten points of a qdrant-edge shard by rebuilding it.

qdrant-edge 0.9.0 keeps every update in its write-ahead log for good (the log's acknowledged index
moves on, its files are never cut) and ``EdgeShard.optimize()`` plans nothing for a shard this
small, so a store that a re-crawl rewrites keeps every old copy. Its API offers no other way back:
the live points are copied into a fresh shard beside the old folder, which then takes its place.

A crash never leaves the collection without a whole shard: the copy is built in
``.<name>.compact``, closed and synced before the swap; on Linux the two folders trade places in
one atomic rename, elsewhere three renames that ``recover`` completes or undoes on the next open.
Collection names never start with a dot, so these folders never look like collections. The caller
holds the folder's lease (``harvester.index.engines.lease``) throughout.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import qdrant_edge as edge

CONFIG_FILE = "edge_config.json"
# Point writes since the shard was built: how much of what it holds on disk is dead.
WRITES_FILE = "harvester_writes.json"
COPY_BATCH = 256
# What Harvester's shards hold in their config: the vectors, and what loading adds (the engine's
# defaults). A shard configured otherwise is not rebuilt.
REBUILT_CONFIG_KEYS = ("vectors", "sparse_vectors")
ENGINE_DEFAULTS = {"on_disk_payload": True, "payload_memory": "cold"}
# A dense vector's stored ``datatype`` as the shard's configuration writes it.
DATATYPES = {"float32": edge.VectorStorageDatatype.Float32, "float16": edge.VectorStorageDatatype.Float16,
             "uint8": edge.VectorStorageDatatype.Uint8}
RENAME_EXCHANGE = 2
AT_FDCWD = -100


class CompactionError(RuntimeError):
    """The shard cannot be rebuilt as it is (the old one is left untouched)."""


@dataclass(frozen=True)
class Compaction:
    """What one compaction did (``bytes_*``: disk blocks in use, as ``du`` counts them)."""

    collection: str
    points: int
    dead_share: float
    bytes_before: int
    bytes_after: int
    seconds: float


def dead_share(live: int, writes: int) -> float:
    """The share of the point writes a shard keeps on disk that no longer count: overwritten or
    deleted (0 for a shard written once)."""
    if writes <= 0 or live >= writes:
        return 0.0
    return 1 - live / writes


def disk_usage(path: Path) -> int:
    """Bytes of disk in use under ``path`` (allocated blocks: the log's files are sparse)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:
                continue
    return total


def read_writes(folder: Path) -> int | None:
    try:
        return int(json.loads((folder / WRITES_FILE).read_text(encoding="utf-8"))["writes"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def write_writes(folder: Path, writes: int) -> None:
    temporary = folder / (WRITES_FILE + ".tmp")
    temporary.write_text(json.dumps({"writes": writes}), encoding="utf-8")
    os.replace(temporary, folder / WRITES_FILE)


def build_folder(folder: Path) -> Path:
    return folder.with_name(f".{folder.name}.compact")


def old_folder(folder: Path) -> Path:
    return folder.with_name(f".{folder.name}.old")


def shard_config(folder: Path) -> edge.EdgeConfig:
    """The configuration ``folder``'s shard was created with, for a new one like it."""
    stored = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    unknown = sorted(key for key, value in stored.items() if key not in REBUILT_CONFIG_KEYS
                     and (key not in ENGINE_DEFAULTS or ENGINE_DEFAULTS[key] != value))
    if unknown:
        raise CompactionError(f"{folder} has settings Harvester does not make ({', '.join(unknown)}); "
                              "copy it with `scrapy export --to-edge` instead")
    vectors = {name: edge.EdgeVectorParams(size=params["size"], distance=getattr(edge.Distance, params["distance"]),
                                           datatype=DATATYPES[params["datatype"]] if params.get("datatype") else None)
               for name, params in (stored.get("vectors") or {}).items()}
    sparse = {name: edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf if params.get("modifier") == "idf" else None)
              for name, params in (stored.get("sparse_vectors") or {}).items()}
    return edge.EdgeConfig(vectors=vectors or None, sparse_vectors=sparse or None)


def rebuild(shard: Any, folder: Path) -> tuple[Path, int]:
    """Copy every point of ``shard`` (open on ``folder``) with its vectors and payload, and its
    payload indexes, into a new shard in ``build_folder(folder)``; closed and synced. Returns the
    new folder and the points copied. The old shard is not changed."""
    target = build_folder(folder)
    shutil.rmtree(target, ignore_errors=True)
    try:
        copied = _copy(shard, folder, target)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    if _stored_config(target) != _stored_config(folder):
        shutil.rmtree(target, ignore_errors=True)
        raise CompactionError(f"the rebuilt shard of {folder} would not have the same configuration")
    write_writes(target, copied)
    _sync_tree(target)
    return target, copied


def _copy(shard: Any, folder: Path, target: Path) -> int:
    new = edge.EdgeShard.create(str(target), shard_config(folder))
    try:
        for key, index in shard.info().payload_schema.items():
            new.update(edge.UpdateOperation.create_field_index(key, index.params or index.data_type))
        copied, offset = 0, None
        while True:
            records, offset = shard.scroll(edge.ScrollRequest(offset=offset, limit=COPY_BATCH,
                                                              with_payload=True, with_vector=True))
            if records:
                new.update(edge.UpdateOperation.upsert_points(
                    [edge.Point(record.id, record.vector or {}, record.payload or {}) for record in records]))
                copied += len(records)
            if offset is None:
                break
        new.flush()
    finally:
        new.close()
    return copied


def swap_into_place(built: Path, folder: Path) -> None:
    """Put ``built`` where ``folder`` is and delete the old shard; each step leaves a whole shard
    at ``folder`` or one that ``recover`` puts back."""
    if _exchange(built, folder):
        _sync_dir(folder.parent)
        shutil.rmtree(built)  # now the old shard
        return
    old = old_folder(folder)
    os.rename(folder, old)
    os.rename(built, folder)
    _sync_dir(folder.parent)
    shutil.rmtree(old)


def recover(folder: Path) -> None:
    """Finish or undo a compaction of ``folder`` that a crash interrupted; remove its leftovers."""
    built, old = build_folder(folder), old_folder(folder)
    if not folder.exists() and old.exists():
        # Interrupted between the renames: the build is whole (it was synced before the first one).
        os.rename(built if (built / CONFIG_FILE).is_file() else old, folder)
        _sync_dir(folder.parent)
    for leftover in (built, old):
        if leftover.exists():
            shutil.rmtree(leftover)


def _stored_config(folder: Path) -> dict[str, Any]:
    stored = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    return {key: stored.get(key) for key in REBUILT_CONFIG_KEYS}


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2``); False where the system cannot."""
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return False
    renameat2 = getattr(ctypes.CDLL(libc_name, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EXDEV):
        return False
    raise OSError(error, os.strerror(error), str(a))


def _sync_tree(root: Path) -> None:
    for path, _dirs, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(path, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _sync_dir(Path(path))


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
