"""The embedded engines side by side on a 35,000-chunk collection, and the query latency targets.

Collection: real documentation text (the flask, requests and scrapy pages of the public kit's truth
files, cut into heading-scoped chunks of about 150 words) embedded with the real model; copies up
to ``--points`` with their words lightly shuffled, their URLs moved to other sites and their
vectors jittered (Gaussian noise, renormalised), so every point is distinct and the collection
looks like many sites of documentation. BM25 sparse vectors are computed from each point's text.

Per engine (qdrant-edge, Harvester's default; qdrant-client's local mode): insert time (against
the model's own embedding throughput on the same chunks), reopen time, store-only query latency
(dense, sparse, filtered), and the warm hybrid query through ``harvester.index.search.search`` with
the model loaded (what the MCP server does per call). Then cold ``scrapy search`` wall times on
the edge store.

    .venv/bin/python bench/bench_engines.py [--points 35000] [--queries 200] [--local-queries 30]

``--cold-only --baseline-tree DIR`` measures the cold ``scrapy search`` alone, on the same
collection (vectors from the cache of an earlier run, no model loaded), this tree and the one in DIR
(another commit's files, as ``git archive`` writes them) alternating query by query, into
``bench/results/engines_cold.json``: on a shared machine only times taken side by side compare.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from harvester.embedding.folder import DEFAULT_MODEL, vector_name
from harvester.embedding.models import load_embedder
from harvester.index import search as search_module
from harvester.index.engines import open_store
from harvester.index.lexical import sparse_query
from harvester.index.search import RANK_KEYS, search
from harvester.index.store import Query, Scope, chunk_payload, chunk_point

EVAL = REPO.parent / "shared" / "eval"
CORPORA = ("flask", "requests", "scrapy")


class _Page:
    """The page fields ``chunk_payload`` reads."""

    def __init__(self, url: str, title: str, chunks: list[dict]) -> None:
        self.url, self.title, self.chunks = url, title, chunks
        self.source_type, self.domain = "html", url.split("/")[2]
        self.section, self.breadcrumbs = url.split("/")[3] if url.count("/") > 3 else "", []
        self.content_hash, self.etag, self.last_modified = "0" * 16, None, None


def real_chunks() -> list[dict]:
    """Heading-scoped chunks of about 150 words from the kit's truth pages."""
    out: list[dict] = []
    for corpus in CORPORA:
        for line in (EVAL / "truth" / f"{corpus}.jsonl").read_text().splitlines():
            page = json.loads(line)
            path, words = [page.get("title") or ""], []
            for block in [*page.get("blocks", []), ["h", 1, ""]]:  # a last heading flushes the tail
                if block[0] == "h" or len(words) >= 150:
                    if len(words) >= 20:
                        out.append({"corpus": corpus, "path": page["url"], "title": page.get("title") or "",
                                    "headings": list(path), "text": " ".join(words)})
                    words = []
                if block[0] == "h":
                    path = path[: max(1, block[1])] + [block[2]]
                else:
                    words.extend(str(block[-1]).split())
    return out


def build_points(chunks: list[dict], vectors: np.ndarray, total: int, vector: str, seed: int = 7) -> list:
    rng = random.Random(seed)
    noise = np.random.default_rng(seed)
    points = []
    for n in range(total):
        base = chunks[n % len(chunks)]
        copy = n // len(chunks)
        words = base["text"].split()
        if copy:
            for _ in range(max(1, len(words) // 10)):  # swap about a tenth of the words
                i, j = rng.randrange(len(words)), rng.randrange(len(words))
                words[i], words[j] = words[j], words[i]
        text = " ".join(words)
        dense = vectors[n % len(chunks)]
        if copy:
            dense = dense + noise.normal(0, 0.02, dense.shape)
            dense = dense / np.linalg.norm(dense)
        url = f"https://{base['corpus']}-{copy}.docs.test{base['path']}"
        chunk = {"id": "", "index": n % 1000, "text": text, "heading_path": base["headings"], "token_count": 0}
        from harvester.index.store import chunk_point_id

        chunk["id"] = chunk_point_id(url, text, n)
        page = _Page(url, base["title"], [chunk])
        points.append(chunk_point(chunk["id"], vector, dense, text, chunk_payload(page, chunk, "2026-12-01T00:00:00")))
    return points


def payload_overhead(points: list) -> dict:
    """What LlamaIndex's node fields add to each point, against the payload without them and the
    whole point (payload JSON, float32 dense vector, sparse indices and values at 4 bytes each)."""
    from harvester.index.store import DOC_ID, NODE_CONTENT, NODE_TYPE

    def size(payload: dict) -> int:
        return len(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode())

    full = [size(p.payload) for p in points]
    bare = [size({k: v for k, v in p.payload.items() if k not in (NODE_CONTENT, NODE_TYPE, DOC_ID)}) for p in points]
    vectors = [4 * len(p.dense) + 8 * len(p.sparse[0]) for p in points]
    added = statistics.mean(full) - statistics.mean(bare)
    return {"payload_bytes_without_node": round(statistics.mean(bare)), "payload_bytes": round(statistics.mean(full)),
            "vector_bytes": round(statistics.mean(vectors)), "node_fields_bytes": round(added),
            "of_payload": round(added / statistics.mean(bare), 3),
            "of_point": round(added / (statistics.mean(bare) + statistics.mean(vectors)), 3)}


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50_ms": round(1000 * statistics.median(ordered), 2),
            "p95_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
            "n": len(ordered)}


def questions() -> list[str]:
    out = []
    for path in sorted((EVAL / "questions").glob("*.jsonl")):
        out.extend(json.loads(line)["query"] for line in path.read_text().splitlines() if line.strip())
    return out


def onnx_encoder():  # type: ignore[no-untyped-def]
    from harvester.embedding.onnx import default_cache_dir
    from harvester.embedding.query import load_onnx_query_encoder

    return load_onnx_query_encoder(DEFAULT_MODEL, str(default_cache_dir()))


def bench_engine(engine: str, points: list, path: Path, embedder, queries: list[str], batch: int) -> dict:
    result: dict = {"engine": engine}
    store = open_store(None, None, str(path), engine)
    store.ensure_collection("c", embedder.vector_name, embedder.dimension)
    start = time.perf_counter()
    for i in range(0, len(points), batch):
        store.upsert("c", points[i:i + batch])
    result["insert_s"] = round(time.perf_counter() - start, 2)
    result["insert_points_per_s"] = round(len(points) / result["insert_s"], 1)
    store.close()
    start = time.perf_counter()
    store = open_store(None, None, str(path), engine)
    result["count"] = store.count("c")
    result["reopen_s"] = round(time.perf_counter() - start, 3)
    dense_vectors = [embedder.encode([q], batch_size=1)[0].tolist() for q in queries]
    timings: dict[str, list[float]] = {"dense": [], "sparse": [], "dense_filtered": [], "hybrid_store": []}
    site = Scope(domain=points[len(points) // 2].payload["metadata"]["domain"])
    for q, dense in zip(queries, dense_vectors, strict=True):
        sparse = sparse_query(q)
        for name, request in (("dense", [Query(20, using=embedder.vector_name, dense=dense)]),
                              ("sparse", [Query(20, sparse=sparse)]),
                              ("dense_filtered", [Query(20, using=embedder.vector_name, dense=dense, scope=site)]),
                              ("hybrid_store", [Query(20, using=embedder.vector_name, dense=dense),
                                                Query(20, sparse=sparse)])):
            start = time.perf_counter()
            store.query("c", request)
            timings[name].append(time.perf_counter() - start)
    result["store_only"] = {name: percentiles(values) for name, values in timings.items()}
    # The query embedded by the torch model, and by the ONNX query encoder that `scrapy mcp` and
    # `scrapy search` use; the search itself the same, with the ranking keys in memory as `scrapy
    # mcp` holds them (``Store.remember``) and, query by query alongside, read from the payloads.
    start = time.perf_counter()
    store.remember("c", RANK_KEYS)
    result["remember_s"] = round(time.perf_counter() - start, 3)
    for label, query_embedder in (("torch", embedder), ("onnx", onnx_encoder())):
        warm: dict[bool, list[float]] = {True: [], False: []}
        for q in queries:
            for remembered in (True, False):
                # Keys not asked for: the store reads each candidate's payload, as without memory.
                search_module.RANK_KEYS = RANK_KEYS if remembered else None  # type: ignore[assignment]
                start = time.perf_counter()
                search(store, "c", query_embedder, q, 5)
                warm[remembered].append(time.perf_counter() - start)
        search_module.RANK_KEYS = RANK_KEYS
        result[f"warm_hybrid_search_{label}"] = percentiles(warm[True])
        result[f"warm_hybrid_search_{label}_payloads"] = percentiles(warm[False])
    store.close()
    # Blocks in use, not apparent sizes: the edge engine's files are sparse, preallocated mmaps.
    result["disk_mb"] = round(sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file()) / 2**20, 1)
    return result


def cold_search(path: Path, queries: list[str], runs: int, trees: tuple[Path, ...] = (REPO,),
                **extra: str) -> dict:
    """Cold ``scrapy search`` runs of each tree in ``trees``, alternating query by query; the
    figures of the first tree, with those of the others under ``trees``."""
    import compileall

    # As an installed package is: with its bytecode (PYTHONDONTWRITEBYTECODE would otherwise make
    # every run compile the modules it imports).
    for tree in trees:
        compileall.compile_dir(tree / "harvester", quiet=1)
    env = dict(os.environ, HARVESTER_QDRANT_PATH=str(path), HARVESTER_QDRANT_COLLECTION="c", HF_HUB_OFFLINE="1",
               **extra)
    walls: dict[Path, list[float]] = {tree: [] for tree in trees}
    cpus: dict[Path, list[float]] = {tree: [] for tree in trees}
    for q in queries[:runs]:
        for tree in trees:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            process = subprocess.run([sys.executable, "-m", "scrapy", "search", "-k", "5", "--", q], cwd=tree,
                                     env=dict(env, PYTHONPATH=str(tree)), capture_output=True, text=True,
                                     timeout=300, check=False)
            walls[tree].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            # CPU seconds (user + system): on a loaded machine the wall time is mostly waiting for a
            # core; on an idle one it is about the CPU time.
            cpus[tree].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            if process.returncode != 0:
                raise RuntimeError(process.stderr[-2000:])

    def figures(tree: Path) -> dict:
        return {"wall_s": [round(w, 2) for w in walls[tree]], "median_s": round(statistics.median(walls[tree]), 2),
                "cpu_s": [round(c, 2) for c in cpus[tree]], "median_cpu_s": round(statistics.median(cpus[tree]), 2)}

    result = figures(trees[0])
    if len(trees) > 1:
        result["trees"] = {str(tree): figures(tree) for tree in trees[1:]}
    return result


def cold_only(args: argparse.Namespace) -> None:
    """``--cold-only``: the cold search of this tree beside ``--baseline-tree``'s, on the collection
    of a full run built again from its cached vectors."""
    load = os.getloadavg()
    chunks = real_chunks()
    cache = Path(args.cache)
    if not cache.is_file() or np.load(cache).shape[0] != len(chunks):
        sys.exit(f"{cache}: no cached vectors of the real chunks (a full run writes them)")
    points = build_points(chunks, np.load(cache), args.points, vector_name(DEFAULT_MODEL))
    qs = questions()
    random.Random(1).shuffle(qs)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=False).stdout.strip()
    results: dict = {"date": str(date.today()), "commit": commit, "points": len(points),
                     "load_before": [round(x, 2) for x in load]}
    with tempfile.TemporaryDirectory(prefix="bench-engines-") as work:
        store = open_store(None, None, str(Path(work) / "edge"), "edge")
        store.ensure_collection("c", vector_name(DEFAULT_MODEL), 384)
        for i in range(0, len(points), args.batch):
            store.upsert("c", points[i:i + args.batch])
        store.close()
        trees = (REPO, *((args.baseline_tree.resolve(),) if args.baseline_tree else ()))
        cold = cold_search(Path(work) / "edge", qs, args.cold_runs, trees)
    baseline = cold.pop("trees", {})
    results["cold_scrapy_search"] = cold
    if args.baseline_tree:
        results["baseline"] = {"tree": args.baseline_tree.name, "commit": args.baseline_commit,
                               "cold_scrapy_search": next(iter(baseline.values()))}
    results["load_after"] = [round(x, 2) for x in os.getloadavg()]
    out = REPO / "bench" / "results" / "engines_cold.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    print(f"wrote {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=35000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--local-queries", type=int, default=30)
    parser.add_argument("--cold-runs", type=int, default=5)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--local-points", type=int, default=0, help="fewer points for local mode (default: all)")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "harvester-bench-engines.npy"))
    parser.add_argument("--real-limit", type=int, default=0, help="embed only this many real chunks (smoke runs)")
    parser.add_argument("--cold-only", action="store_true", help="only the cold search (engines_cold.json)")
    parser.add_argument("--baseline-tree", type=Path, help="with --cold-only: another commit's files, measured alongside")
    parser.add_argument("--baseline-commit", help="with --baseline-tree: the commit its files are from (recorded)")
    args = parser.parse_args()
    if args.cold_only:
        cold_only(args)
        return

    load = os.getloadavg()
    embedder = load_embedder(DEFAULT_MODEL)
    chunks = real_chunks()
    if args.real_limit:
        chunks = chunks[:args.real_limit]
    # The model's throughput is measured on a sample every run; the vectors of all the real chunks
    # are cached between runs (embedding them all takes minutes on a loaded machine).
    sample = [c["text"] for c in chunks[:256]]
    start = time.perf_counter()
    embedder.encode(sample, batch_size=32)
    model_rate = len(sample) / (time.perf_counter() - start)
    cache = Path(args.cache)
    if cache.is_file() and np.load(cache).shape[0] == len(chunks):
        vectors = np.load(cache)
    else:
        vectors = embedder.encode([c["text"] for c in chunks], batch_size=32)
        np.save(cache, vectors)
    print(f"{len(chunks)} real chunks embedded at {model_rate:.1f} chunks/s", flush=True)
    points = build_points(chunks, vectors, args.points, embedder.vector_name)
    results_overhead = payload_overhead(points[:len(chunks)])
    print(json.dumps({"overhead": results_overhead}), flush=True)
    qs = questions()
    random.Random(1).shuffle(qs)
    results = {"date": str(date.today()), "points": len(points), "real_chunks": len(chunks),
               "model_chunks_per_s": round(model_rate, 1), "load_before": [round(x, 2) for x in load],
               "payload_overhead": results_overhead, "engines": []}
    with tempfile.TemporaryDirectory(prefix="bench-engines-") as work:
        edge = bench_engine("edge", points, Path(work) / "edge", embedder, qs[:args.queries], args.batch)
        edge["insert_vs_model"] = round(edge["insert_points_per_s"] / model_rate, 1)
        print(json.dumps(edge), flush=True)
        results["engines"].append(edge)
        results["cold_scrapy_search"] = cold_search(Path(work) / "edge", qs, args.cold_runs)
        results["cold_scrapy_search_model_backend"] = cold_search(
            Path(work) / "edge", qs, max(1, args.cold_runs // 2), HARVESTER_QUERY_ENCODER="model")
        print(json.dumps(results["cold_scrapy_search"]), flush=True)
        if not args.skip_local:
            local_points = points[:args.local_points] if args.local_points else points
            local = bench_engine("local", local_points, Path(work) / "local", embedder, qs[:args.local_queries],
                                 args.batch)
            local["insert_vs_model"] = round(local["insert_points_per_s"] / model_rate, 1)
            print(json.dumps(local), flush=True)
            results["engines"].append(local)
    results["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    results["load_after"] = [round(x, 2) for x in os.getloadavg()]
    out = REPO / "bench" / "results" / "engines.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
