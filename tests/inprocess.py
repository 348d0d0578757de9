"""Crawls in the test process, the way ``scrapy crawl`` runs them, so that a test pays for Python,
Scrapy, torch and the model once per session instead of once per crawl.

One Twisted reactor (Scrapy's default, the asyncio one) runs in a daemon thread for the whole
session; each crawl is a coroutine on its loop, as in Scrapy's own tests (``AsyncCrawlerRunner``).
Around it, this module does what ``scrapy crawl`` does around ``CrawlerProcess`` (``scrapy.cmdline``
and ``harvester/commands/crawl.py``): the project settings with the crawl's environment variables,
``-s`` at command-line priority and ``-O`` as FEEDS, the add-on's pre-crawler settings, the checks
and exit statuses of the crawl command (shared with it: ``crawl_refusal``, ``crawl_outcome``), the
name resolver built from the process settings, and the log in Scrapy's format. State that a
process keeps across crawls and that a fresh ``scrapy crawl`` would not have is reset before each
crawl (``reset_process_state``); the loaded models are kept on purpose.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import configparser
import logging
import os
import threading
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy.crawler import Crawler
    from scrapy.settings import Settings

REPO = Path(__file__).resolve().parent.parent
ASYNCIO_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
# The environment the project settings module saw when it was first imported (conftest imports
# this module before any test runs or changes the environment).
_IMPORT_ENVIRONMENT = dict(os.environ)
# How long a crawl that timed out may take to stop before the test is failed anyway.
STOP_GRACE = 60.0

logger = logging.getLogger(__name__)


class CrawlTimeout(AssertionError):
    """A crawl ran past its timeout (it was stopped)."""


def install_reactor() -> None:
    """Install Scrapy's default reactor; must run in the main thread before anything imports
    ``twisted.internet.reactor`` (tests/conftest.py does it when pytest loads it)."""
    from scrapy.utils.reactor import install_reactor as install
    from scrapy.utils.reactor import is_asyncio_reactor_installed, is_reactor_installed

    if not is_reactor_installed():
        install(ASYNCIO_REACTOR)
    if not is_asyncio_reactor_installed():
        raise RuntimeError("another Twisted reactor was installed before tests/conftest.py ran")


class ReactorThread:
    """The session's reactor, running in a daemon thread; started on the first crawl."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> asyncio.AbstractEventLoop:
        if self._thread is None:
            install_reactor()
            from twisted.internet import reactor

            _route_logging()
            self.loop = reactor._asyncioEventloop  # the reactor's loop (Scrapy reads it too)
            self._thread = threading.Thread(target=reactor.run, kwargs={"installSignalHandlers": False},
                                            name="test-reactor", daemon=True)
            self._thread.start()
        assert self.loop is not None
        return self.loop

    def run(self, coroutine: Any, timeout: float | None = None) -> Any:
        """Run ``coroutine`` on the reactor's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.start()).result(timeout)

    def stop(self) -> None:
        """Stop the reactor (its shutdown stops Twisted's thread pool)."""
        if self._thread is None:
            return
        from twisted.internet import reactor

        reactor.callFromThread(reactor.stop)
        self._thread.join(30)
        self._thread = None


REACTOR = ReactorThread()


def _route_logging() -> None:
    """What ``scrapy.utils.log.configure_logging`` sets up once per process, less the root handler
    (each crawl gets its own, see ``LogCapture``) and the warnings capture (pytest's)."""
    from logging.config import dictConfig

    from scrapy.utils.log import DEFAULT_LOGGING
    from twisted.python import log as twisted_log

    twisted_log.PythonLoggingObserver("twisted").start()
    dictConfig(DEFAULT_LOGGING)


class LogCapture(logging.Handler):
    """The root handler ``scrapy crawl`` would install (Scrapy's format and level, from the
    settings of the process and then of the crawler), writing into a string, or into LOG_FILE."""

    def __init__(self) -> None:
        super().__init__()
        self._lines: list[str] = []
        self._file: logging.FileHandler | None = None
        self._enabled = True
        self._short_names: logging.Filter | None = None

    def configure(self, settings: Settings) -> None:
        from scrapy.utils.log import TopLevelFormatter

        self.setFormatter(logging.Formatter(fmt=settings.get("LOG_FORMAT"), datefmt=settings.get("LOG_DATEFORMAT")))
        self.setLevel(settings.get("LOG_LEVEL"))
        self._enabled = settings.getbool("LOG_ENABLED") or bool(settings.get("LOG_FILE"))
        if self._short_names is not None:
            self.removeFilter(self._short_names)
            self._short_names = None
        if settings.getbool("LOG_SHORT_NAMES"):
            self._short_names = TopLevelFormatter(["scrapy"])
            self.addFilter(self._short_names)
        if settings.get("LOG_FILE") and self._file is None:
            mode = "a" if settings.getbool("LOG_FILE_APPEND") else "w"
            self._file = logging.FileHandler(settings.get("LOG_FILE"), mode=mode, encoding=settings.get("LOG_ENCODING"))

    def emit(self, record: logging.LogRecord) -> None:
        if not self._enabled:
            return
        try:
            text = self.format(record)
        except Exception:
            self.handleError(record)
            return
        if self._file is not None:
            self._file.stream.write(text + "\n")
            self._file.flush()
        else:
            self._lines.append(text)

    def text(self) -> str:
        return "".join(line + "\n" for line in self._lines)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        super().close()

    def __enter__(self) -> Self:
        root = logging.getLogger()
        self._root_level = root.level
        # As Scrapy's root handler does (level NOTSET on the root): the handler's level decides.
        root.setLevel(logging.NOTSET)
        root.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        root = logging.getLogger()
        root.removeHandler(self)
        root.setLevel(self._root_level)
        self.close()


_CAPTURE: LogCapture | None = None


def _crawler_class() -> type[Crawler]:
    from scrapy.crawler import Crawler

    class CapturedCrawler(Crawler):
        def _update_root_log_handler(self) -> None:
            # Scrapy re-creates its root handler from each crawler's settings; ours is updated.
            if _CAPTURE is not None:
                _CAPTURE.configure(self.settings)

    return CapturedCrawler


def settings_module(env: Mapping[str, str]) -> str:
    """The settings module a ``scrapy`` process started with ``env`` in the project loads."""
    name = env.get("SCRAPY_SETTINGS_MODULE")
    if not name:
        config = configparser.ConfigParser()
        config.read(REPO / "scrapy.cfg")
        name = config.get("settings", env.get("SCRAPY_PROJECT", "default"))
    return name


def project_settings(env: Mapping[str, str]) -> Settings:
    """The settings ``get_project_settings()`` gives a ``scrapy`` process started with ``env``
    (the settings module of scrapy.cfg, or of SCRAPY_SETTINGS_MODULE / SCRAPY_PROJECT)."""
    from scrapy.settings import Settings

    from harvester.config.spec import environment_settings

    module = import_module(settings_module(env))
    # The module set the settings of the environment variables it saw on import; those are
    # replaced by the ones this crawl's environment gives.
    imported = environment_settings(_IMPORT_ENVIRONMENT)
    values = {key: getattr(module, key) for key in dir(module) if key.isupper()}
    values = {key: value for key, value in values.items() if not (key in imported and imported[key] == value)}
    settings = Settings()
    settings.setdict(values, priority="project")
    settings.setdict(environment_settings(env), priority="project")
    scrapy_variables = {"CHECK", "PROJECT", "PYTHON_SHELL", "SETTINGS_MODULE"}
    settings.setdict({key[7:]: value for key, value in env.items()
                      if key.startswith("SCRAPY_") and key[7:] in scrapy_variables}, priority="project")
    return settings


def command_settings(env: Mapping[str, str], options: dict[str, Any], feeds: list[str]) -> Settings:
    """``scrapy crawl ... -s NAME=VALUE -O FEED``'s settings, before the crawler process starts."""
    from scrapy.utils.conf import arglist_to_dict, feed_process_params_from_cli

    settings = project_settings(env)
    settings.setdict(arglist_to_dict([f"{name}={value}" for name, value in options.items()]), priority="cmdline")
    if feeds:
        settings.set("FEEDS", feed_process_params_from_cli(settings, [], overwrite_output=feeds), priority="cmdline")
    return settings


def reset_process_state() -> None:
    """Forget what an earlier crawl left in this process that a new ``scrapy crawl`` would not
    know: warn-once sets, Scrapy's DNS cache, torch's thread count. (The guard's table of refused
    hosts is emptied by installing the resolver.) Loaded models stay: that is the point."""
    import sys

    from scrapy.resolver import dnscache

    import harvester.proxy
    import harvester.sites.loader

    harvester.sites.loader._warned.clear()
    harvester.proxy._warned_aliases.clear()
    dnscache.clear()
    if "torch" in sys.modules and _TORCH_THREADS is not None:
        sys.modules["torch"].set_num_threads(_TORCH_THREADS)


def _torch_threads() -> int | None:
    try:
        import torch
    except ImportError:
        return None
    return torch.get_num_threads()


_TORCH_THREADS: int | None = None


def _install_resolver(runner: Any) -> None:
    """``CrawlerProcess._setup_reactor``: the name resolver of TWISTED_DNS_RESOLVER, built from the
    process settings, and the reactor's thread pool size. Each crawl installs its own, as each
    ``scrapy crawl`` process does."""
    from scrapy.utils.misc import build_from_crawler, load_object
    from twisted.internet import reactor

    resolver = build_from_crawler(load_object(runner.settings["TWISTED_DNS_RESOLVER"]), runner, reactor=reactor)
    resolver.install_on_reactor()
    reactor.getThreadPool().adjustPoolsize(maxthreads=runner.settings.getint("REACTOR_THREADPOOL_MAXSIZE"))


class _Run:
    """One crawl on the reactor's loop; ``crawler`` is set once it exists (to stop it)."""

    def __init__(self, settings: Settings, spider: str, spargs: dict[str, Any]) -> None:
        self.settings = settings
        self.spider = spider
        self.spargs = spargs
        self.crawler: Crawler | None = None

    async def __call__(self) -> tuple[int, str | None]:
        from scrapy.crawler import AsyncCrawlerRunner
        from scrapy.utils.log import log_scrapy_info

        from harvester.commands.crawl import crawl_outcome, crawl_refusal

        runner = AsyncCrawlerRunner(self.settings)  # applies the add-on's pre-crawler settings
        if _CAPTURE is not None:
            _CAPTURE.configure(runner.settings)
        log_scrapy_info(runner.settings)
        spidercls = runner.spider_loader.load(self.spider)
        refusal = crawl_refusal(runner.settings, spidercls, self.spargs)
        if refusal is not None:
            return 2, refusal
        _install_resolver(runner)
        self.crawler = _crawler_class()(spidercls, runner.settings)
        task = runner.crawl(self.crawler, **self.spargs)
        await asyncio.wait([task])
        if not task.cancelled() and task.exception() is not None:
            # The command's event loop reports a crawl task that raised when it is collected.
            logging.getLogger("asyncio").error("Task exception was never retrieved", exc_info=task.exception())
        return crawl_outcome(self.crawler, runner.bootstrap_failed)

    async def stop(self) -> None:
        # Crawler.stop_async() only stops a running engine (and raises before the engine exists):
        # a stop while the spider is still being opened, slow on a loaded machine, would be lost
        # and the crawl would run on beside the next one, so wait for the engine to start first.
        # ``_engine`` is what Scrapy says to read before the crawl has started (_LateAttribute).
        while self.crawler is not None and self.crawler.crawling:
            engine = self.crawler._engine
            if engine is not None and engine.running:
                await self.crawler.stop_async()
                return
            await asyncio.sleep(0.05)


_LOCK = threading.Lock()


def run_crawl(spider: str, env: Mapping[str, str], options: dict[str, Any], spargs: dict[str, Any],
              feeds: list[str], timeout: float) -> tuple[int, str]:
    """Crawl in this process as ``scrapy crawl SPIDER -a ... -s ... -O FEED`` would with ``env``;
    its exit status and output (the log, then the ``harvester: error:`` line the command prints)."""
    global _CAPTURE, _TORCH_THREADS
    if not _LOCK.acquire(blocking=False):
        raise RuntimeError("in-process crawls run one at a time")
    try:
        if _TORCH_THREADS is None:
            _TORCH_THREADS = _torch_threads()
        settings = command_settings(env, options, feeds)
        reset_process_state()
        run = _Run(settings, spider, spargs)
        with LogCapture() as capture:
            _CAPTURE = capture
            future = asyncio.run_coroutine_threadsafe(run(), REACTOR.start())
            try:
                code, error = future.result(timeout)
            except BaseException as exc:  # the timeout here, or pytest-timeout's, or Ctrl-C
                _stop(run, future)
                if isinstance(exc, concurrent.futures.TimeoutError):
                    raise CrawlTimeout(f"the crawl ran past {timeout} s and was stopped:\n"
                                       + capture.text()[-3000:]) from None
                raise
            finally:
                _CAPTURE = None
            output = capture.text()
    finally:
        _LOCK.release()
    if error is not None:
        output += f"harvester: error: {error}\n"
    return code, output


def _stop(run: _Run, future: concurrent.futures.Future[Any]) -> None:
    """Stop a crawl that must end now, and wait for it, so the next one starts alone."""
    loop = REACTOR.start()
    try:
        asyncio.run_coroutine_threadsafe(run.stop(), loop).result(STOP_GRACE)
        future.result(STOP_GRACE)
    except BaseException:  # it is being abandoned; the test fails already
        logger.exception("A timed-out crawl did not stop cleanly")


def run_command(argv: list[str], env: Mapping[str, str]) -> tuple[int, str, str]:
    """``scrapy ARGV`` for a command that starts no crawler (``search``), in this process, as a
    process started with ``env`` would run it: its exit status, stdout and stderr."""
    import contextlib
    import io

    from scrapy.cmdline import execute

    settings = project_settings(env)
    out, err = io.StringIO(), io.StringIO()
    code: int | str | None = 0
    previous = os.environ.get("SCRAPY_SETTINGS_MODULE")
    # Project commands need to know they run in the project, wherever pytest was started.
    os.environ["SCRAPY_SETTINGS_MODULE"] = settings_module(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                execute(["scrapy", *argv], settings=settings)
            except SystemExit as exc:
                code = exc.code
    finally:
        if previous is None:
            del os.environ["SCRAPY_SETTINGS_MODULE"]
        else:
            os.environ["SCRAPY_SETTINGS_MODULE"] = previous
    if not isinstance(code, int):
        code = 0 if code is None else 1
    return code, out.getvalue(), err.getvalue()
