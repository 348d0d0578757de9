"""Start-up: the young-generation GC threshold, the BLAS spin, the HTTP handler imported before
the engine, and what the crawl command freezes: made by the commands that run, never by importing the
project's settings or command modules."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harvester.memory import YOUNG_GC_THRESHOLD
from harvester.threads import BLAS_THREAD_TIMEOUT
from tests.crawl import REPO


@pytest.mark.e2e
@pytest.mark.parametrize(("environment", "expected"), [(None, "16"), ("24", "24")])
def test_a_crawl_shortens_openblas_spinning_before_numpy_loads_unless_the_environment_says(
        tmp_path, environment, expected):
    """Scrapy imports Harvester's command modules before it runs any command: when the crawl first
    imports NumPy (deduplication does), OpenBLAS reads a short spin (its threads spun 0.1 s of a
    core at NumPy's import). A value the environment sets wins."""
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


def python(code: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env,
                          check=True)
    return done.stdout.split()


def test_importing_the_settings_and_the_commands_changes_nothing_in_the_process() -> None:
    code = ("import gc, os, sys, importlib, pkgutil; threshold = gc.get_threshold(); import harvester.settings; "
            "print('harvester.commands' in sys.modules); import harvester.commands; "
            "[importlib.import_module(f'harvester.commands.{m.name}') "
            "for m in pkgutil.iter_modules(harvester.commands.__path__)]; "
            "print(gc.get_threshold() == threshold, os.environ.get('OPENBLAS_THREAD_TIMEOUT'))")
    assert python(code) == ["False", "True", "None"]


def test_a_command_tunes_its_process_before_numpy_loads() -> None:
    code = ("import gc, os, sys; from harvester.commands.startup import tune_process; tune_process(); "
            "print(gc.get_threshold()[0], os.environ.get('OPENBLAS_THREAD_TIMEOUT'), 'numpy' in sys.modules)")
    assert python(code) == [str(YOUNG_GC_THRESHOLD), BLAS_THREAD_TIMEOUT, "False"]
