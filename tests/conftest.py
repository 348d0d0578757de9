from __future__ import annotations

import importlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from tests.inprocess import REACTOR, install_reactor

if TYPE_CHECKING:
    from tests.servers.sitesrv import SiteServer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# In-process crawls (tests/crawl.py) run on Scrapy's default reactor, which must be installed
# before anything imports twisted.internet.reactor.
install_reactor()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers more than the cores. The crawl tests wait on loopback servers,
    browsers and child processes for much of their time, which other workers' tests use (on 2
    cores, with one more worker the CPU was busy 152% of 200%, with two 170%)."""
    return (os.cpu_count() or 1) + 2


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    REACTOR.stop()


# CI (.ci/run sets CI) installs every prerequisite and has ../shared/eval beside the checkout: a
# missing one there is a broken build, so it fails; on a user's clone it skips the tests that need it.
IN_CI = bool(os.environ.get("CI"))


def missing_prerequisite(reason: str) -> NoReturn:
    """Skip for want of ``reason``'s prerequisite, or fail in CI; also usable at module level."""
    if IN_CI:
        pytest.fail(f"{reason} (CI is set, where every prerequisite must be present)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def import_prerequisite(module: str, reason: str | None = None) -> ModuleType:
    """``pytest.importorskip`` that fails in CI."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing_prerequisite(reason or f"{module} is not installed ({exc})")


def requires(available: bool, reason: str) -> pytest.MarkDecorator:
    """``pytest.mark.skipif(not available, ...)`` that fails in CI."""
    return pytest.mark.prerequisite(available, reason=reason)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "prerequisite(available, reason): see tests.conftest.requires")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("prerequisite"):
        if not mark.args[0]:
            missing_prerequisite(mark.kwargs["reason"])


REPO = Path(__file__).resolve().parent.parent
EVAL_DIR = REPO.parent / "shared" / "eval"
DOC_ROOTS = {
    "flask": Path("/usr/share/doc/python-flask-doc/html"),
    "requests": Path("/usr/share/doc/python-requests-doc/html"),
    "scrapy": Path("/usr/share/doc/python-scrapy-doc/html"),
}


def doc_root(corpus: str) -> Path:
    root = DOC_ROOTS[corpus]
    if not root.is_dir():
        missing_prerequisite(f"{root} is missing: apt-get install python-{corpus}-doc")
    return root


def truth_pages(corpus: str) -> list[dict[str, Any]]:
    path = EVAL_DIR / "truth" / f"{corpus}.jsonl"
    if not path.exists():
        missing_prerequisite(f"the public scorer is missing at {EVAL_DIR}")
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="session")
def doc_sites() -> Iterator[Callable[[str], SiteServer]]:
    """``doc_sites("flask")``: Debian's documentation of a corpus served on loopback, one server per
    corpus for the whole session. Shared: tests only read it (no routes added, no log asserted)."""
    from tests.servers.sitesrv import SiteServer

    servers: dict[str, SiteServer] = {}

    def serve(corpus: str) -> SiteServer:
        if corpus not in servers:
            servers[corpus] = SiteServer(root=doc_root(corpus)).__enter__()
        return servers[corpus]

    yield serve
    for server in servers.values():
        server.__exit__(None, None, None)


@pytest.fixture(scope="session")
def shared_crawl(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, Callable[[Path], None]], Path]:
    """``shared_crawl(key, run)``: a folder that ``run(folder)`` fills (a crawl, checked) once per
    test run, by the first xdist worker to ask; the others wait on its lock and read the same folder.
    Only for crawls that the tests read and never change."""
    import fcntl

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    # Under xdist each worker's base temp is a folder of the run's own: its parent is shared.
    root = tmp_path_factory.getbasetemp().parent if worker else tmp_path_factory.getbasetemp()
    (root / "shared").mkdir(exist_ok=True)

    def folder(key: str, run: Callable[[Path], None]) -> Path:
        target, done = root / "shared" / key, root / "shared" / f"{key}.done"
        with (root / "shared" / f"{key}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not done.exists():
                shutil.rmtree(target, ignore_errors=True)  # what a failed run left
                target.mkdir()
                run(target)
                done.touch()
        return target

    return folder


@pytest.fixture(scope="session")
def corpus_crawl(shared_crawl: Callable[[str, Callable[[Path], None]], Path],
                 doc_sites: Callable[[str], SiteServer]) -> Callable[[str, str], Path]:
    """``corpus_crawl("flask", "site")``: the feed of a spider over Debian's documentation of a
    corpus, discovery and extraction alone (no embedding, no index), crawled once per test run."""

    def feed(corpus: str, spider: str) -> Path:
        def run(folder: Path) -> None:
            from tests.crawl import NO_EMBEDDING, crawl

            result = crawl(spider, doc_sites(corpus).url, folder, settings=NO_EMBEDDING)
            assert result.returncode == 0, result.output[-3000:]

        return shared_crawl(f"{corpus}-{spider}", run) / "pages.jsonl"

    return feed


@pytest.fixture(scope="session")
def eval_sites() -> Iterator[Callable[..., str]]:
    """``eval_sites("requests", "--js-only")``: the public scorer's own server (../shared/eval/serve.py)
    for a corpus, started once per session and set of options; its base URL."""
    import subprocess
    import sys
    import time

    from tests.servers.proxysrv import _accepts, free_port

    started: dict[tuple[str, ...], tuple[subprocess.Popen[bytes], str]] = {}

    def serve(corpus: str, *options: str) -> str:
        key = (corpus, *options)
        if key not in started:
            doc_root(corpus)
            if not (EVAL_DIR / "serve.py").exists():
                missing_prerequisite(f"the public scorer is missing at {EVAL_DIR}")
            port = free_port()
            process = subprocess.Popen([sys.executable, str(EVAL_DIR / "serve.py"), corpus, "--port", str(port),
                                        *options, "--quiet"])
            started[key] = (process, f"http://127.0.0.1:{port}/")
            deadline = time.monotonic() + 30
            while not _accepts("127.0.0.1", port):
                assert time.monotonic() < deadline and process.poll() is None, "serve.py did not start"
                time.sleep(0.2)
        return started[key][1]

    yield serve
    for process, _ in started.values():
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The folder of a small deterministic embedder (tests/tinymodel.py), for
    ``HARVESTER_EMBEDDING_MODEL`` in tests that are not about vectors."""
    from tests.tinymodel import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-minilm"))


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    from harvester.embedding.models import load_embedder

    return load_embedder("sentence-transformers/all-MiniLM-L6-v2").tokenizer


def score_feed(corpus: str, feed: Path, *extra: str) -> dict[str, Any]:
    """The public scorer's figures for a JSONL feed (its last JSON line)."""
    import subprocess
    import sys

    if not (EVAL_DIR / "score.py").exists():
        missing_prerequisite(f"the public scorer is missing at {EVAL_DIR}")
    process = subprocess.run([sys.executable, str(EVAL_DIR / "score.py"), corpus, str(feed), *extra],
                             capture_output=True, text=True, timeout=300, check=True)
    return json.loads([line for line in process.stdout.splitlines() if line.startswith("{")][-1])


def qdrant_points(path: Path, collection: str = "harvester", engine: str = "edge") -> list[Any]:
    """Every point of an embedded store (``engine``: ``edge`` or ``local``) with ``id`` and ``payload``."""
    from harvester.index.engines import open_store

    store = open_store(None, None, str(path), engine, wait=30)
    try:
        return list(store.scroll(collection))
    finally:
        store.close()
