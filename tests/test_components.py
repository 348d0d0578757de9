"""Component wiring, settings parsing and small pure helpers."""

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.test import get_crawler

from harvester.addon import HarvesterAddon
from harvester.chunking.pipeline import ChunkingPipeline
from harvester.commands.crawl import crawl_failure
from harvester.dedup.pipeline import DedupPipeline
from harvester.embedding.pipeline import EmbeddingPipeline
from harvester.exceptions import DuplicatePage
from harvester.fetch.throttle import CrawlDelayThrottle
from harvester.index.pipeline import IndexPipeline
from harvester.index.store import chunk_payload, point_id
from harvester.items import PageItem
from harvester.memory import YOUNG_GC_THRESHOLD
from harvester.report.extension import format_summary
from tests.crawl import REPO


class UncheckedAddon(HarvesterAddon):
    """The add-on's defaults and wiring without its settings check, so that each component's own
    refusal of a bad value (NotConfigured) can be tested: the real add-on stops such a crawler
    before any component is built (test_config.py)."""

    @classmethod
    def from_crawler(cls, crawler):
        return cls()


def crawler_with(**settings):
    return get_crawler(settings_dict={"ADDONS": {UncheckedAddon: 0}, **settings})


def components(settings, name):
    """A component priority dict with its base, keyed by class (the add-on names its components
    by import path)."""
    return {load_object(key): value for key, value in settings.get_component_priority_dict_with_base(name).items()}


def test_addon_defaults_and_pipeline_order():
    settings = crawler_with().settings
    assert settings.getbool("ROBOTSTXT_OBEY") and settings.getbool("AUTOTHROTTLE_ENABLED")
    assert settings["USER_AGENT"].startswith("Harvester/")
    assert not settings.getbool("TELNETCONSOLE_ENABLED")
    # Scrapy starts CONCURRENT_ITEMS tasks for every response's output (scrapy.utils.asyncio
    # _parallel_asyncio): 100 by default, for a page and a few links.
    assert settings.getint("CONCURRENT_ITEMS") == 16
    pipelines = components(settings, "ITEM_PIPELINES")
    order = sorted((pipelines[c], c) for c in (DedupPipeline, ChunkingPipeline, EmbeddingPipeline, IndexPipeline))
    assert [c for _, c in order] == [DedupPipeline, ChunkingPipeline, EmbeddingPipeline, IndexPipeline]
    assert "vectors" not in settings.getlist("FEED_EXPORT_FIELDS")


def test_what_every_command_imports_holds_no_heavy_module():
    import subprocess
    import sys

    heavy = ["qdrant_client", "datasketch", "scipy", "torch", "sentence_transformers", "transformers", "numpy",
             "tokenizers", "trafilatura", "markdownify", "bs4", "pypdf", "playwright", "scrapy_playwright", "grpc",
             "qdrant_edge", "onnxruntime", "mcp"]
    # What `scrapy crawl` imports before a crawl starts: the settings, the add-on, every command
    # module (Scrapy imports them all) and the spiders.
    code = ("import sys, importlib, pkgutil, harvester.addon, harvester.settings, harvester.commands, "
            "harvester.spiders.site, harvester.spiders.docs, harvester.spiders.sitemap; "
            "[importlib.import_module(f'harvester.commands.{m.name}') "
            "for m in pkgutil.iter_modules(harvester.commands.__path__)]; "
            f"print([m for m in {heavy!r} if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_crawl_without_embedding_or_index_imports_neither_qdrant_nor_the_model():
    """Nor the store's module (the commands catch its errors from harvester.exceptions), nor
    numpy.random (20-30 ms; a page's signature draws its permutations with the standard library)."""
    import subprocess
    import sys

    code = ("import sys, harvester.extract.middleware, harvester.chunking.pipeline, harvester.dedup.pipeline, "
            "harvester.recrawl.extension, harvester.report.extension, harvester.urls.middleware, "
            "harvester.commands.search, harvester.commands.export, harvester.commands.mcp; "
            "from harvester.dedup.minhash import MinHash; "
            "from harvester.dedup.shingles import markdown_word_hashes, shingle_hashes; "
            "MinHash.of(shingle_hashes(markdown_word_hashes('one two three four five six seven'), 5)); "
            "print('numpy' in sys.modules, [m for m in ('qdrant_client', 'grpc', 'torch', 'sentence_transformers', "
            "'transformers', 'harvester.index.store', 'numpy.random') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True []"


@pytest.mark.parametrize("switched_on", [False, True])
def test_extensions_that_listen_on_a_port_are_not_even_imported_when_off(switched_on):
    """Scrapy imports every extension it lists to learn that it is off: the remote-control server
    imports aiohttp (a tenth of a second of every crawl's start). Switched on, both are there."""
    import json
    import subprocess
    import sys

    code = ("import sys, json; from scrapy.utils.test import get_crawler; "
            "from scrapy.extension import ExtensionManager; from harvester.addon import HarvesterAddon; "
            "crawler = get_crawler(settings_dict={'ADDONS': {HarvesterAddon: 0}, **json.loads(sys.argv[1])}); "
            "crawler._apply_settings(); "
            "listed = list(crawler.settings.get_component_priority_dict_with_base('EXTENSIONS')); "
            "print(json.dumps([listed, [m for m in ('aiohttp', 'scrapy.extensions.remote_control', "
            "'scrapy.extensions.telnet') if m in sys.modules]]))")
    switches = {"REMOTE_CONTROL_ENABLED": switched_on, "TELNETCONSOLE_ENABLED": switched_on}
    done = subprocess.run([sys.executable, "-c", code, json.dumps(switches)], capture_output=True, text=True,
                          cwd=REPO, check=True)
    listed, imported = json.loads(done.stdout.strip().splitlines()[-1])
    ours = {"scrapy.extensions.remote_control.RemoteControl", "scrapy.extensions.telnet.TelnetConsole"}
    if switched_on:
        assert ours <= set(listed)
    else:
        assert not ours & set(listed) and imported == []
    assert "harvester.report.extension.RunReport" in listed


def test_point_ids_are_the_stores():
    from harvester.index import ids, store

    assert ids.POINT_NAMESPACE == store.POINT_NAMESPACE
    for url, text in (("http://h/a", "# A\n\ntext"), ("http://h/b?x=1", "caf\u00e9  \n x")):
        assert ids.point_id(url, 3) == store.point_id(url, 3)
        assert ids.chunk_point_id(url, text, 2) == store.chunk_point_id(url, text, 2)
        assert ids.chunk_point_id(url, text) == store.chunk_point_id(url, text)
        assert ids.boilerplate_point_id(text) == store.boilerplate_point_id(text)


@pytest.mark.parametrize("key", [IndexPipeline, "harvester.index.pipeline.IndexPipeline"])
def test_a_component_turned_off_stays_off_however_it_is_named(key):
    settings = crawler_with(ITEM_PIPELINES={key: None}).settings
    assert IndexPipeline not in components(settings, "ITEM_PIPELINES")
    assert DedupPipeline in components(settings, "ITEM_PIPELINES")


@pytest.mark.parametrize(("component", "switch"), [(IndexPipeline, "HARVESTER_INDEX_ENABLED"),
                                                    (EmbeddingPipeline, "HARVESTER_EMBEDDING_ENABLED")])
def test_a_pipeline_switched_off_is_not_even_listed(component, switch):
    """Scrapy imports every listed component to learn that it is off (Qdrant's client, the
    embedding process pool): one switched off by its setting is not listed."""
    assert component in components(crawler_with().settings, "ITEM_PIPELINES")
    assert component not in components(crawler_with(**{switch: False}).settings, "ITEM_PIPELINES")
    assert DedupPipeline in components(crawler_with(**{switch: False}).settings, "ITEM_PIPELINES")


def test_user_settings_override_addon_defaults():
    settings = crawler_with(USER_AGENT="MyBot/1.0", HARVESTER_QDRANT_COLLECTION="x").settings
    assert settings["USER_AGENT"] == "MyBot/1.0"
    assert settings["HARVESTER_QDRANT_COLLECTION"] == "x"


@pytest.mark.parametrize(
    ("component", "toggle"),
    [(DedupPipeline, "HARVESTER_DEDUP_ENABLED"), (ChunkingPipeline, "HARVESTER_CHUNKING_ENABLED"),
     (EmbeddingPipeline, "HARVESTER_EMBEDDING_ENABLED"), (IndexPipeline, "HARVESTER_INDEX_ENABLED")],
)
def test_each_pipeline_switches_off(component, toggle):
    with pytest.raises(NotConfigured):
        build_from_crawler(component, crawler_with(**{toggle: False}))
    assert build_from_crawler(component, crawler_with()) is not None


def test_invalid_pipeline_settings_disable_with_a_reason():
    with pytest.raises(NotConfigured, match="BATCH_SIZE"):
        build_from_crawler(EmbeddingPipeline, crawler_with(HARVESTER_EMBEDDING_BATCH_SIZE=0))
    with pytest.raises(NotConfigured, match="needs vectors"):
        build_from_crawler(IndexPipeline, crawler_with(HARVESTER_EMBEDDING_ENABLED=False))


def test_autothrottle_is_replaced_and_crawl_delay_works_without_it():
    crawler = crawler_with()
    extensions = components(crawler.settings, "EXTENSIONS")
    assert extensions[CrawlDelayThrottle] == 0
    assert build_from_crawler(CrawlDelayThrottle, crawler_with(AUTOTHROTTLE_ENABLED=False)) is not None
    with pytest.raises(NotConfigured):
        build_from_crawler(CrawlDelayThrottle, crawler_with(
            AUTOTHROTTLE_ENABLED=False, HARVESTER_CRAWL_DELAY_ENABLED=False))


def page(url="http://h/a.html", markdown="# A\n\ntext", content_hash="h1"):
    return PageItem(url=url, title="A", markdown=markdown, content_hash=content_hash)


def test_dedup_drops_same_url_and_same_content():
    import asyncio

    pipeline = build_from_crawler(DedupPipeline, crawler_with())
    asyncio.run(pipeline.process_item(page()))
    with pytest.raises(DuplicatePage, match="URL already stored"):
        asyncio.run(pipeline.process_item(page(content_hash="other")))
    with pytest.raises(DuplicatePage, match="same content as http://h/a.html"):
        asyncio.run(pipeline.process_item(page(url="http://h/index.html")))
    stored = asyncio.run(pipeline.process_item(page(url="http://h/b.html", content_hash="h2", markdown="# B\n\nother")))
    assert stored.url == "http://h/b.html"


def test_point_ids_are_deterministic_uuids_and_payload_is_rag_shaped():
    assert point_id("http://h/a", 0) == point_id("http://h/a", 0) != point_id("http://h/a", 1)
    item = page()
    item.chunks = [{"id": point_id(item.url, 0), "index": 0, "text": "t", "heading_path": ["A"], "token_count": 1}]
    payload = chunk_payload(item, item.chunks[0], "2026-01-01T00:00:00+00:00")
    assert payload["page_content"] == "t"
    meta = payload["metadata"]
    for key in ("source_type", "source_url", "domain", "title", "section", "breadcrumbs", "headings",
                "chunk_index", "total_chunks", "content_hash", "harvested_at"):
        assert key in meta
    assert meta["total_chunks"] == 1 and meta["source_url"] == "http://h/a.html"


def test_crawl_failure_verdicts():
    assert crawl_failure({"finish_reason": "finished", "harvester/pages/crawled": 3}) is None
    assert "start URL" in crawl_failure({"finish_reason": "start_url_failed"})
    assert "Qdrant" in crawl_failure({"finish_reason": "index_unavailable", "harvester/pages/crawled": 1})
    assert "no page" in crawl_failure({"finish_reason": "finished"})
    assert "every page" in crawl_failure({"finish_reason": "finished", "harvester/pages/crawled": 2,
                                          "harvester/pages/failed/extraction_error": 2})


def test_summary_block_names_every_figure():
    text = format_summary({
        "spider": "docs", "finish_reason": "finished", "pages_crawled": 5, "pages_stored": 3,
        "pages_skipped": 1, "skipped_by_reason": {"robots_forbidden": 1}, "pages_failed": 1,
        "failed_by_reason": {"http_404": 1}, "chunks_stored": 12, "elapsed_seconds": 2.5,
    }, "/tmp/r.json")
    for words in ("pages crawled:  5", "pages stored:   3", "robots_forbidden: 1", "http_404: 1",
                  "chunks stored:  12", "2.5 s", "/tmp/r.json"):
        assert words in text


def test_failure_reasons_are_short_codes():
    from scrapy import exceptions
    from scrapy.http import Response
    from scrapy.spidermiddlewares.httperror import HttpError
    from twisted.internet import error

    from harvester.report.failures import failure_reason

    assert failure_reason(exceptions.DownloadConnectionRefusedError("x")) == "connection_refused"
    assert failure_reason(exceptions.CannotResolveHostError("x")) == "dns_lookup_failed"
    assert failure_reason(error.TimeoutError()) == "timeout"
    assert failure_reason(HttpError(Response("http://h/", status=503))) == "http_503"
    assert failure_reason(exceptions.IgnoreRequest("Forbidden by robots.txt")) == "robots_forbidden"


def test_collection_is_created_once_and_checked_against_the_model(tmp_path):
    from qdrant_client import QdrantClient, models

    from harvester.index.store import CollectionMismatch, ensure_collection

    client = QdrantClient(path=str(tmp_path / "q"))
    try:
        client.create_collection("old", vectors_config={"model-a": models.VectorParams(
            size=8, distance=models.Distance.COSINE)})
        with pytest.raises(CollectionMismatch, match="no 'bm25-en' sparse vector"):
            ensure_collection(client, "old", "model-a", 8)
        assert ensure_collection(client, "c", "model-a", 8) is True
        assert ensure_collection(client, "c", "model-a", 8) is False
        with pytest.raises(CollectionMismatch, match="stores 8-dimensional"):
            ensure_collection(client, "c", "model-a", 16)
        with pytest.raises(CollectionMismatch, match="no vector named 'model-b'"):
            ensure_collection(client, "c", "model-b", 8)
    finally:
        client.close()


def test_embedded_collection_is_created_once_and_checked_against_the_model(tmp_path):
    from harvester.index.engines import open_store
    from harvester.index.store import CollectionMismatch

    store = open_store(None, None, str(tmp_path / "q"))
    try:
        assert store.ensure_collection("c", "model-a", 8) is True
        assert store.ensure_collection("c", "model-a", 8) is False
        with pytest.raises(CollectionMismatch, match="stores 8-dimensional"):
            store.ensure_collection("c", "model-a", 16)
        with pytest.raises(CollectionMismatch, match="no vector named 'model-b'"):
            store.ensure_collection("c", "model-b", 8)
        assert store.collections() == ["c"]
    finally:
        store.close()


def test_context_lines_shrink_when_they_would_break_the_limit():
    from harvester.chunking.chunker import TextChunk, whitespace_counter

    pipeline = build_from_crawler(ChunkingPipeline, crawler_with())
    pipeline._count, pipeline._max_tokens = whitespace_counter, 10
    pieces = [TextChunk("one two three", ("Short",), 3), TextChunk("w " * 7, ("A long section heading",), 7),
              TextChunk("w " * 10, ("H",), 10)]
    assert pipeline._fit_contexts("Title", pieces) == ["Title > Short", "Title", ""]


def test_malloc_is_tuned_unless_the_environment_or_the_setting_says_otherwise():
    import platform
    import subprocess
    import sys

    from harvester.memory.extension import MallocTuning

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc only")
    code = "from harvester.memory import tune_malloc; print(' '.join(tune_malloc()))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]
    import os

    env = {**os.environ, "MALLOC_ARENA_MAX": "4"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.split() == ["MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]
    # A torch model in this process keeps glibc's own thresholds (a fixed one slowed it to
    # 0.70-0.85x); ONNX Runtime's arena is as fast under the fixed one (the default backend here).
    built = ("from scrapy.utils.misc import build_from_crawler; from tests.test_components import crawler_with; "
             "from harvester.memory.extension import MallocTuning; "
             "print(' '.join(build_from_crawler(MallocTuning, crawler_with(**{0})).applied))")
    for settings, applied in (
        ({"HARVESTER_EMBEDDING_BACKEND": "torch"}, ["MALLOC_ARENA_MAX"]),
        ({}, ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]),
        ({"HARVESTER_EMBEDDING_PROCESS": True}, ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]),
        ({"HARVESTER_EMBEDDING_ENABLED": False}, ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]),
    ):
        done = subprocess.run([sys.executable, "-c", built.format(settings)], capture_output=True, text=True,
                              check=True, cwd=REPO)
        assert done.stdout.split() == applied, settings
    with pytest.raises(NotConfigured):
        build_from_crawler(MallocTuning, crawler_with(HARVESTER_MALLOC_TUNING=False))
    assert "harvester.memory.extension.MallocTuning" in crawler_with().settings.getdict("EXTENSIONS")


def test_embedding_hands_the_model_several_waiting_pages_at_once(monkeypatch):
    """Pages that wait while the model works go to it together (up to GROUP_BATCHES batches), so
    their chunks are sorted by length together and batches carry less padding; after each call the
    heap's free memory goes back to the system (the torch model runs in this process)."""
    import asyncio
    import threading

    import numpy as np

    from harvester.embedding import pipeline as embedding_pipeline
    from harvester.embedding.pipeline import GROUP_BATCHES
    from harvester.memory import trim_malloc

    trims = []
    monkeypatch.setattr(embedding_pipeline, "trim_malloc", lambda: trims.append(1) or trim_malloc())

    class RecordingModel:
        def __init__(self):
            self.calls: list[int] = []
            self.release = threading.Event()

        def encode(self, texts, batch_size):
            self.calls.append(len(texts))
            self.release.wait(5)  # the first call holds the model while the other pages queue
            return [np.zeros(2, dtype=np.float32) for _ in texts]

    batch = 4
    pipeline = build_from_crawler(EmbeddingPipeline, crawler_with(HARVESTER_EMBEDDING_BATCH_SIZE=batch,
                                                                   HARVESTER_EMBEDDING_BACKEND="torch"))
    model = pipeline._embedder = RecordingModel()
    pages = [PageItem(url=f"https://example.org/{n}", title="A", markdown="x", content_hash=str(n)) for n in range(12)]
    for n, page in enumerate(pages):
        page.chunks = [{"id": f"{n}-{i}", "text": f"page {n} chunk {i}", "context": ""} for i in range(3)]

    async def crawl():
        first = asyncio.ensure_future(pipeline.process_item(pages[0]))
        while not model.calls:
            await asyncio.sleep(0.01)
        rest = [asyncio.ensure_future(pipeline.process_item(page)) for page in pages[1:]]
        await asyncio.sleep(0.05)
        model.release.set()
        return await asyncio.gather(first, *rest)

    done = asyncio.run(crawl())
    pipeline._worker.close()
    assert all(len(page.vectors) == 3 for page in done)
    # 11 waiting pages of 3 chunks: whole pages up to batch x GROUP_BATCHES chunks per call.
    limit = batch * GROUP_BATCHES
    assert model.calls[0] == 3
    assert model.calls[1] > 3  # several pages in one call
    assert model.calls[1] == limit // 3 * 3 and sum(model.calls) == 36
    assert len(trims) == len(model.calls)
    for settings in ({"HARVESTER_EMBEDDING_PROCESS": True}, {"HARVESTER_MALLOC_TUNING": False}):
        assert not build_from_crawler(EmbeddingPipeline, crawler_with(**settings))._trim


def test_a_page_of_thousands_of_chunks_is_written_in_bounded_upserts():
    """One page can hold thousands of chunks; its points go to the store WRITE_BATCH at a time, so
    their vectors never all exist as Python lists at once."""
    import numpy as np

    from harvester.index.pipeline import WRITE_BATCH

    class RecordingStore:
        def __init__(self):
            self.upserts: list[int] = []
            self.ids: list[str] = []

        def upsert(self, collection, points):
            self.upserts.append(len(points))
            self.ids += [p.id for p in points]

        def overwrite_payloads(self, collection, points):
            pass

        def delete(self, collection, ids=(), scope=None):
            pass

    pipeline = build_from_crawler(IndexPipeline, crawler_with())
    store = pipeline._client = RecordingStore()
    pipeline._vector = "all-MiniLM-L6-v2"
    size = WRITE_BATCH * 2 + 88
    page = PageItem(url="https://example.org/changelog", title="Changelog", markdown="x", content_hash="h")
    page.chunks = [{"id": f"c{i}", "text": f"entry {i}", "context": "Changelog", "index": i,
                    "heading_path": ["Changelog"], "token_count": 3} for i in range(size)]
    page.vectors = list(np.zeros((size, 4), dtype=np.float32))
    pipeline._write([page])
    pipeline._worker.close()
    assert store.upserts == [WRITE_BATCH, WRITE_BATCH, 88]
    assert store.ids == [f"c{i}" for i in range(size)]


def test_chunking_turns_the_tokenizers_thread_pool_off_unless_the_environment_says(monkeypatch):
    import os

    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    build_from_crawler(ChunkingPipeline, crawler_with())
    assert os.environ["TOKENIZERS_PARALLELISM"] == "false"
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    build_from_crawler(ChunkingPipeline, crawler_with())
    assert os.environ["TOKENIZERS_PARALLELISM"] == "true"


@pytest.mark.e2e
@pytest.mark.parametrize("environment, expected", [(None, "16"), ("24", "24")])
def test_a_crawl_shortens_openblas_spinning_before_numpy_loads_unless_the_environment_says(
        tmp_path, environment, expected):
    """Scrapy imports Harvester's command modules before it runs any command: when the crawl first
    imports NumPy (deduplication does), OpenBLAS reads a short spin (its threads spun 0.1 s of a
    core at NumPy's import, bench/bench_blas_spin.py). A value the environment sets wins."""
    import subprocess
    import sys

    from tests.crawl import scrapy_env
    from tests.servers.sitesrv import SiteServer

    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(
        "<html><head><title>Index</title></head><body><main><h1>The index</h1><p>"
        + "Words of the index page, enough of them to be a page of their own. " * 20 + "</p></main></body></html>")
    env = {k: v for k, v in scrapy_env(tmp_path).items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    if environment is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = environment
    # What the environment holds when the crawl imports NumPy.
    code = ("import atexit, os, sys\n"
            "seen = []\n"
            "class NumpyProbe:\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name == 'numpy' and not seen:\n"
            "            seen.append(os.environ.get('OPENBLAS_THREAD_TIMEOUT'))\n"
            "sys.meta_path.insert(0, NumpyProbe())\n"
            "atexit.register(lambda: print('numpy imported with', seen))\n"
            "from scrapy.cmdline import execute\n"
            "execute(sys.argv)\n")
    with SiteServer(root=site) as server:
        done = subprocess.run([sys.executable, "-c", code, "crawl", "site", "-a", f"start={server.url}index.html",
                               "-O", str(tmp_path / "pages.jsonl"), "-s", "HARVESTER_EMBEDDING_ENABLED=0",
                               "-s", "HARVESTER_INDEX_ENABLED=0"],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"numpy imported with [{expected!r}]" in done.stdout
    assert (tmp_path / "pages.jsonl").read_text().count("\n") == 1


def test_the_young_generation_is_collected_less_often_unless_someone_chose_otherwise():
    import subprocess
    import sys

    code = ("import gc, sys; from harvester.memory import raise_young_gc_threshold; "
            "gc.set_threshold(*map(int, sys.argv[1:])); "
            "print(raise_young_gc_threshold(), *gc.get_threshold())")
    outcomes = {}
    for threshold in ("700 10 10", "50000 5 5", "0 10 10"):
        done = subprocess.run([sys.executable, "-c", code, *threshold.split()], capture_output=True, text=True,
                              cwd=REPO, check=True)
        outcomes[threshold] = done.stdout.split()
    assert outcomes == {"700 10 10": ["True", str(YOUNG_GC_THRESHOLD), "10", "10"],
                        "50000 5 5": ["False", "50000", "5", "5"], "0 10 10": ["False", "0", "10", "10"]}


def test_openblas_spinning_is_left_alone_once_numpy_is_loaded():
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    code = ("import os, numpy; from harvester.threads import quiet_blas_threads; "
            "print(quiet_blas_threads(), os.environ.get('OPENBLAS_THREAD_TIMEOUT'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env,
                          check=True)
    assert done.stdout.split() == ["False", "None"]


@pytest.mark.e2e
def test_the_crawl_command_imports_the_http_handler_before_the_engine_does(tmp_path):
    """Scrapy's deprecated-class aliases in the HTTP/1.1 handler's modules each call
    ``inspect.stack()`` to name their module, and the real one reads the source of every frame:
    the crawl command imports the handler itself, with a stack that lists the frames only, so the
    engine finds it loaded; the aliases still name their modules, and ``inspect.stack`` is the real
    one again afterwards."""
    import ast
    import subprocess
    import sys

    from tests.crawl import scrapy_env
    from tests.servers.sitesrv import SiteServer

    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(
        "<html><head><title>Index</title></head><body><main><h1>The index</h1><p>"
        + "Words of the index page, enough of them to be a page of their own. " * 20 + "</p></main></body></html>")
    # Each alias's creation (seen as it asks for its caller's module): the files on the stack, and
    # whether inspect.stack was the real one; and every frame whose source the real one read.
    code = ("import atexit, inspect, sys\n"
            "real_stack, real_findsource, real_getmodule = inspect.stack, inspect.findsource, inspect.getmodule\n"
            "aliases, sources_read = [], []\n"
            "def getmodule(*args, **kwargs):\n"
            "    frame = sys._getframe(1)\n"
            "    if frame.f_code.co_filename.endswith('scrapy/utils/deprecate.py'):\n"
            "        files = []\n"
            "        while frame is not None:\n"
            "            files.append(frame.f_code.co_filename)\n"
            "            frame = frame.f_back\n"
            "        aliases.append((files, inspect.stack is real_stack))\n"
            "    return real_getmodule(*args, **kwargs)\n"
            "def findsource(obj):\n"
            "    sources_read.append(repr(obj))\n"
            "    return real_findsource(obj)\n"
            "inspect.getmodule = getmodule\n"
            "inspect.findsource = findsource\n"
            "def report():\n"
            "    from scrapy.core.downloader import contextfactory, tls\n"
            "    modules = [tls.ScrapyClientTLSOptions.__module__, contextfactory.ScrapyClientContextFactory.__module__,\n"
            "               contextfactory.AcceptableProtocolsContextFactory.__module__]\n"
            "    print('REPORT', repr((aliases, sources_read, modules, inspect.stack is real_stack)))\n"
            "atexit.register(report)\n"
            "from scrapy.cmdline import execute\n"
            "execute(sys.argv)\n")
    with SiteServer(root=site) as server:
        done = subprocess.run([sys.executable, "-c", code, "crawl", "site", "-a", f"start={server.url}index.html",
                               "-O", str(tmp_path / "pages.jsonl"), "-s", "HARVESTER_EMBEDDING_ENABLED=0",
                               "-s", "HARVESTER_INDEX_ENABLED=0"],
                              cwd=REPO, env=scrapy_env(tmp_path), capture_output=True, text=True, timeout=300,
                              check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    aliases, sources_read, modules, restored = ast.literal_eval(done.stdout.split("REPORT ", 1)[1].strip())
    assert len(aliases) == 3  # the handler's three aliases, once each
    for files, real_stack in aliases:
        assert any(name.endswith("harvester/commands/crawl.py") for name in files)
        assert not any(name.endswith("scrapy/core/engine.py") for name in files)
        assert not real_stack
    assert sources_read == []
    assert modules == ["scrapy.core.downloader.tls", "scrapy.core.downloader.contextfactory",
                       "scrapy.core.downloader.contextfactory"]
    assert restored
    assert "The index" in (tmp_path / "pages.jsonl").read_text()
    assert (tmp_path / "pages.jsonl").read_text().count("\n") == 1


@pytest.mark.e2e
def test_the_crawl_command_freezes_start_up_and_leaves_the_last_collections_to_the_exit(tmp_path):
    """`scrapy crawl` freezes what start-up built once the spider opens (full collections then
    walk only the crawl's objects), and what is alive after the crawl (the interpreter's final
    collections cost 0.2 s of a small crawl's CPU); the crawl's own garbage is still collected,
    and the feed and the index, closed with the spider, are whole."""
    import ast
    import json
    import subprocess
    import sys

    from tests.conftest import qdrant_points
    from tests.crawl import scrapy_env
    from tests.servers.sitesrv import SiteServer

    site = tmp_path / "site"
    site.mkdir()
    for name, other in (("index", "guide"), ("guide", "index")):
        (site / f"{name}.html").write_text(
            f"<html><head><title>{name}</title></head><body><main><h1>The {name}</h1><p>"
            + f"Words of the {name} page, enough of them to be a page of their own. " * 20
            + f'</p><a href="{other}.html">{other}</a></main></body></html>')
    frozen = tmp_path / "frozen.txt"
    # In the crawl: what is frozen when the first page reaches chunking, and whether a cycle of
    # garbage made then is collected.
    code = ("import atexit, gc, sys, weakref\n"
            "from harvester.chunking.pipeline import ChunkingPipeline\n"
            "seen = []\n"
            "class Cycle:\n"
            "    pass\n"
            "def first_page(process_item):\n"
            "    async def recording(self, item):\n"
            "        if not seen:\n"
            "            cycle = Cycle(); cycle.me = cycle\n"
            "            alive = weakref.ref(cycle); del cycle\n"
            "            gc.collect()\n"
            "            seen.append((gc.get_freeze_count(), alive() is None, gc.get_threshold()[0]))\n"
            "        return await process_item(self, item)\n"
            "    return recording\n"
            "ChunkingPipeline.process_item = first_page(ChunkingPipeline.process_item)\n"
            f"atexit.register(lambda: open({str(frozen)!r}, 'w').write(repr((seen[0], gc.get_freeze_count()))))\n"
            "from scrapy.cmdline import execute\n"
            "execute(sys.argv)\n")
    with SiteServer(root=site) as server:
        done = subprocess.run([sys.executable, "-c", code, "crawl", "site", "-a", f"start={server.url}index.html",
                               "-O", str(tmp_path / "pages.jsonl")],
                              cwd=REPO, env=scrapy_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (frozen_in_crawl, garbage_collected, young_threshold), frozen_at_exit = ast.literal_eval(frozen.read_text())
    assert frozen_in_crawl > 10_000 and garbage_collected
    assert young_threshold == YOUNG_GC_THRESHOLD  # raised when Scrapy imported Harvester's commands
    assert frozen_at_exit > frozen_in_crawl
    pages = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    assert sorted(page["title"] for page in pages) == ["guide", "index"]
    chunks = sum(len(page["chunks"]) for page in pages)
    assert chunks >= 2 and len(qdrant_points(tmp_path / "qdrant")) == chunks
