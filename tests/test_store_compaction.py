"""Compaction of the embedded store: re-crawls leave it at most 1.25x a fresh crawl's size, a
compacted shard holds exactly the points it held, a crash mid-way leaves a usable store, a reader
in another process keeps working, and ``scrapy compact`` works or says why not."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from harvester.index.engines import compaction
from harvester.index.engines.edge import EdgeStore, edge_collections
from harvester.index.store import Point, Scope
from tests.crawl import REPO, crawl, scrapy_command
from tests.servers.recrawl_site import EditableSite
from tests.servers.sitesrv import SiteServer

# A fresh crawl's size, times this, is the most a re-crawled store may take.
SIZE_LIMIT = 1.25


def make_points(ids: list[str], seed: int) -> list[Point]:
    rng = random.Random(seed)
    return [Point(point_id, {"page_content": f"text {seed} {n} " * 40,
                             "metadata": {"source_url": f"http://h/{n % 20}"}},
                  [rng.random() for _ in range(64)], ([n, n + 1], [0.5, 0.25]), "dense")
            for n, point_id in enumerate(ids)]


def all_points(store: EdgeStore) -> dict[str, Point]:
    return {point.id: point for point in store.points("c")}


@pytest.fixture
def rewritten(tmp_path: Path) -> tuple[EdgeStore, Path]:
    """A store whose 600 points were written, then rewritten three times, and 30 of them deleted."""
    store = EdgeStore(tmp_path, wait=10)
    store.ensure_collection("c", "dense", 64)
    ids = [str(uuid.UUID(int=n)) for n in range(600)]
    for seed in range(4):
        store.upsert("c", make_points(ids, seed))
    store.delete("c", scope=Scope(url="http://h/3"))
    yield store, tmp_path / "edge" / "c"
    store.close()


def fresh_size(tmp_path: Path, points: list[Point]) -> int:
    store = EdgeStore(tmp_path / "fresh", wait=10)
    store.ensure_collection("c", "dense", 64)
    store.upsert("c", points)
    store.close()
    return compaction.disk_usage(tmp_path / "fresh" / "edge" / "c")


def test_dead_share_counts_overwritten_and_deleted_writes():
    assert compaction.dead_share(100, 100) == 0
    assert compaction.dead_share(0, 0) == 0
    assert compaction.dead_share(100, 400) == 0.75
    assert compaction.dead_share(0, 30) == 1


def test_compaction_keeps_every_point_exactly_and_gives_the_space_back(rewritten, tmp_path):
    store, folder = rewritten
    before = all_points(store)
    assert len(before) == 570
    assert store.dead_share("c") == pytest.approx(1 - 570 / (4 * 600 + 30))
    grown = compaction.disk_usage(folder)
    fresh = fresh_size(tmp_path, list(before.values()))
    assert grown > SIZE_LIMIT * fresh, "the engine keeps rewritten points: nothing to test otherwise"

    done = store.compact("c")
    assert done is not None and done.points == 570 and done.bytes_before >= grown
    assert all_points(store) == before, "same ids, payloads, dense and sparse vectors"
    assert compaction.disk_usage(folder) <= SIZE_LIMIT * fresh
    assert store.dead_share("c") == 0
    # The payload index is rebuilt too: filtered reads and deletes still work.
    assert store.count("c", Scope(url="http://h/4")) == 30
    assert [name for name in os.listdir(folder.parent) if name.startswith(".")] == []
    assert edge_collections(tmp_path) == ["c"]


@pytest.mark.parametrize("datatype", ["float16", "float32"])
def test_compaction_keeps_how_the_dense_vectors_are_stored(tmp_path, monkeypatch, datatype):
    # float32: a store made before dense vectors were kept as 16-bit floats.
    monkeypatch.setattr("harvester.index.engines.edge.DENSE_DATATYPE", compaction.DATATYPES[datatype])
    store = EdgeStore(tmp_path, wait=10)
    store.ensure_collection("c", "dense", 64)
    monkeypatch.undo()
    ids = [str(uuid.UUID(int=n)) for n in range(50)]
    store.upsert("c", make_points(ids, 0))
    store.upsert("c", make_points(ids, 1))
    before = all_points(store)
    assert store.compact("c") is not None
    assert all_points(store) == before
    config = json.loads((tmp_path / "edge" / "c" / "edge_config.json").read_text())
    assert config["vectors"]["dense"].get("datatype", "float32") == datatype
    store.close()


def test_the_threshold_decides_and_the_count_survives_reopening(rewritten, tmp_path):
    store, _ = rewritten
    store.close()
    reopened = EdgeStore(tmp_path, wait=10)
    try:
        assert reopened.dead_share("c") > 0.7, "the writes are counted on disk"
        assert reopened.compact("c", threshold=0.8) is None
        assert reopened.compact("c", threshold=0.5) is not None
        assert reopened.compact("c", threshold=0.01) is None, "a compacted shard has nothing dead"
    finally:
        reopened.close()


def test_a_crash_mid_compaction_leaves_a_usable_store(rewritten, tmp_path, monkeypatch):
    store, folder = rewritten
    before = all_points(store)
    store.close()

    # Killed while building: the half-built copy is thrown away.
    built = compaction.build_folder(folder)
    built.mkdir()
    (built / "segments").mkdir()
    reopened = EdgeStore(tmp_path, wait=10)
    assert all_points(reopened) == before
    assert not built.exists()

    # Killed between the renames of the fallback swap (systems without an atomic exchange): the
    # whole copy is put in place.
    monkeypatch.setattr(compaction, "_exchange", lambda a, b: False)
    shard = reopened._shards["c"]
    copy, _ = compaction.rebuild(shard, folder)
    reopened.close()
    os.rename(folder, compaction.old_folder(folder))
    assert not folder.exists()
    again = EdgeStore(tmp_path, wait=10)
    assert again.exists("c") or compaction.old_folder(folder).exists()
    assert again.ensure_collection("c", "dense", 64) is False, "never recreated empty"
    assert all_points(again) == before
    assert not copy.exists() and not compaction.old_folder(folder).exists()

    # The fallback swap itself, uninterrupted.
    assert again.compact("c") is not None
    assert all_points(again) == before
    again.close()


READER = textwrap.dedent("""
    import sys, time
    from harvester.index.engines.edge import EdgeStore
    from harvester.index.store import Scope
    store = EdgeStore(sys.argv[1], wait=30)
    print("ready", store.count("c"), flush=True)
    deadline = time.monotonic() + float(sys.argv[2])
    counts = set()
    while time.monotonic() < deadline:
        counts.add((store.count("c"), store.count("c", Scope(url="http://h/4"))))
        time.sleep(0.01)
    store.close()
    print("counts", sorted(counts), flush=True)
""")


def test_a_reader_in_another_process_waits_for_the_compaction_and_reads_on(rewritten, tmp_path):
    store, _ = rewritten
    store.close()
    reader = subprocess.Popen([sys.executable, "-c", READER, str(tmp_path), "4"], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None
        assert reader.stdout.readline().split() == ["ready", "570"]
        time.sleep(0.3)  # the reader holds the shard and reads in a loop
        compactor = EdgeStore(tmp_path, wait=30)
        try:
            assert compactor.compact("c") is not None
        finally:
            compactor.close()
        out, err = reader.communicate(timeout=60)
    finally:
        reader.kill()
    assert reader.returncode == 0, err[-2000:]
    assert out.strip() == "counts [(570, 30)]", "every read saw the whole collection"


# End to end: crawls of a site that changes between them.


def store_size(workdir: Path) -> int:
    return compaction.disk_usage(workdir / "qdrant" / "edge" / "harvester")


def change(site: EditableSite, round_: int) -> None:
    """Edit a section of every page, drop a page and add one: most points are rewritten."""
    for name in list(site.sections):
        if name not in site.deleted:
            site.edit(name, round_ % 4, f"Revision {round_} of {name} reads differently.")
    site.delete(min(set(site.sections) - site.deleted))
    site.add(f"added{round_}")


def test_recrawls_stay_within_a_fresh_crawls_size_and_the_command_compacts(tmp_path, tiny_model):
    site = EditableSite([f"page{n}" for n in range(12)], sections=4)
    settings = {"HARVESTER_EMBEDDING_MODEL": tiny_model}
    work = tmp_path / "w"
    sizes = []
    with SiteServer(routes=site.routes) as server:
        start = server.url + "docs/index.html"
        for round_ in range(3):
            result = crawl("docs", start, work, settings=settings)
            assert result.returncode == 0, result.output[-3000:]
            sizes.append(store_size(work))
            change(site, round_)
            site.publish(server)
        assert "harvester/index/compaction/seconds" in result.output
        last = crawl("docs", start, work, settings=settings)
        fresh = crawl("docs", start, tmp_path / "fresh", settings=settings)
    assert last.returncode == fresh.returncode == 0
    assert store_size(work) <= SIZE_LIMIT * store_size(tmp_path / "fresh"), (sizes, store_size(tmp_path / "fresh"))
    index = EdgeStore(work / "qdrant", wait=10)
    fresh_index = EdgeStore(tmp_path / "fresh" / "qdrant", wait=10)
    try:
        assert {p.id for p in index.points("harvester")} == {p.id for p in fresh_index.points("harvester")}
    finally:
        index.close()
        fresh_index.close()

    # On demand: the command compacts whatever is dead, and says so.
    command = scrapy_command(["compact"], work)
    assert command.returncode == 0, command.stderr
    assert "compacted 'harvester'" in command.stdout
    assert store_size(work) <= SIZE_LIMIT * store_size(tmp_path / "fresh")
    skipped = scrapy_command(["compact", "--if-over", "0.5"], work)
    assert skipped.returncode == 0 and "needs no compaction" in skipped.stdout


def test_the_command_fails_clearly_without_a_store(tmp_path):
    missing = scrapy_command(["compact"], tmp_path / "nowhere")
    assert missing.returncode == 1
    assert "harvester: error: no collection 'harvester' at" in missing.stderr
    assert not (tmp_path / "nowhere" / "qdrant" / "edge" / "harvester").exists()
    a_file = tmp_path / "file"
    a_file.write_text("not a store")
    not_a_folder = scrapy_command(["compact", "-s", f"HARVESTER_QDRANT_PATH={a_file}"], tmp_path)
    assert not_a_folder.returncode == 1 and "harvester: error: no collection" in not_a_folder.stderr
    bad = scrapy_command(["compact", "--collection", "../x"], tmp_path)
    assert bad.returncode == 1 and "harvester: error:" in bad.stderr
    server = scrapy_command(["compact"], tmp_path, QDRANT_URL="http://127.0.0.1:9")
    assert server.returncode == 1 and "only the embedded engine" in server.stderr


@pytest.mark.e2e
def test_recrawls_with_the_real_model_compact_and_search_finds_the_new_text(tmp_path):
    site = EditableSite(["alpha", "beta", "gamma"], sections=3)
    work = tmp_path / "w"
    with SiteServer(routes=site.routes) as server:
        start = server.url + "docs/index.html"
        for round_ in range(3):
            assert crawl("docs", start, work).returncode == 0
            for name in site.sections:
                site.edit(name, round_ % 3, f"Marmalade recipe number {round_} for {name}.")
            site.publish(server)
        last = crawl("docs", start, work)
        fresh = crawl("docs", start, tmp_path / "fresh")
    assert last.returncode == fresh.returncode == 0
    assert store_size(work) <= SIZE_LIMIT * store_size(tmp_path / "fresh")
    found = scrapy_command(["search", "--json", "Marmalade recipe number 2 for beta"], work)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)[0]["url"].endswith("/docs/beta.html")


def test_no_compaction_folder_is_a_collection(tmp_path):
    store = EdgeStore(tmp_path, wait=10)
    store.ensure_collection("c", "dense", 64)
    store.close()
    shutil.copytree(tmp_path / "edge" / "c", compaction.build_folder(tmp_path / "edge" / "c"))
    assert edge_collections(tmp_path) == ["c"]
