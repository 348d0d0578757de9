"""Benchmark: what compacting the embedded store costs, and what it gives back.

A collection of real documentation chunks (the kit's truth pages, as ``bench_engines.py`` builds
them, with Harvester's full payload) and random unit vectors of the default model's size: the
vectors' values do not change what is stored. Per size: a fresh store written once; a store
written once and then rewritten ``--rewrites`` times (every point again, the way a re-crawl of a
changed site rewrites it); then ``EdgeStore.compact`` on the rewritten store. Reports the disk in
use (as ``du`` counts it) of each, the compaction's wall time and rate, and checks that the
compacted store holds the same points as before.

    .venv/bin/python bench/bench_compaction.py [--points 1400 35000] [--rewrites 3] [--json-out F]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from bench.bench_engines import build_points, real_chunks
from harvester.index.engines.compaction import disk_usage
from harvester.index.engines.edge import EdgeStore

COLLECTION = "bench"
VECTOR = "all-MiniLM-L6-v2"
DIMENSION = 384
BATCH = 256


def write(store: EdgeStore, points: list) -> None:
    for start in range(0, len(points), BATCH):
        store.upsert(COLLECTION, points[start:start + BATCH])


def bench_size(chunks: list[dict], total: int, rewrites: int, root: Path) -> dict[str, object]:
    rng = np.random.default_rng(total)
    vectors = rng.normal(size=(len(chunks), DIMENSION))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    points = build_points(chunks, vectors, total, VECTOR)

    fresh = EdgeStore(root / "fresh")
    fresh.ensure_collection(COLLECTION, VECTOR, DIMENSION)
    write(fresh, points)
    fresh.close()
    fresh_bytes = disk_usage(root / "fresh" / "edge" / COLLECTION)

    store = EdgeStore(root / "rewritten")
    store.ensure_collection(COLLECTION, VECTOR, DIMENSION)
    for _ in range(1 + rewrites):
        write(store, points)
    share = store.dead_share(COLLECTION)
    before = {point.id: point for point in store.points(COLLECTION)}
    done = store.compact(COLLECTION)
    assert done is not None
    after = {point.id: point for point in store.points(COLLECTION)}
    store.close()
    return {
        "points": total, "rewrites": rewrites, "dead_share": round(share, 3),
        "fresh_mb": round(fresh_bytes / 1e6, 2), "rewritten_mb": round(done.bytes_before / 1e6, 2),
        "compacted_mb": round(done.bytes_after / 1e6, 2),
        "compacted_over_fresh": round(done.bytes_after / fresh_bytes, 3),
        "compact_s": round(done.seconds, 2), "points_per_s": round(total / done.seconds),
        "same_points": after == before,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=int, nargs="+", default=[1400, 35000])
    parser.add_argument("--rewrites", type=int, default=3)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    chunks = real_chunks()
    results: dict[str, object] = {"date": date.today().isoformat(), "cpus": os.cpu_count(),
                                  "load_average": [round(x, 2) for x in os.getloadavg()], "sizes": []}
    for total in args.points:
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            row = bench_size(chunks, total, args.rewrites, Path(tmp))
            row["bench_wall_s"] = round(time.perf_counter() - started, 1)
        results["sizes"].append(row)  # type: ignore[union-attr]
        print(json.dumps(row), flush=True)
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
