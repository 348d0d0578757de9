"""Where the pipeline's CPU work runs: small work on the calling (reactor) thread, once the worker
is idle; large work in the worker thread; one call at a time either way."""

from __future__ import annotations

import asyncio
import gc
import threading

import pytest

from harvester.threads import Worker
from tests.crawl import NO_EMBEDDING, crawl


def _where() -> str:
    return threading.current_thread().name


def test_small_work_runs_here_large_work_in_the_worker():
    worker = Worker("test-worker", inline_below=100)

    async def main() -> list[str]:
        return [await worker.run_sized(99, _where), await worker.run_sized(100, _where),
                await worker.run_sized(5, _where), await worker.run(_where)]

    try:
        here = threading.current_thread().name
        small, large, small_again, always = asyncio.run(main())
    finally:
        worker.close()
    assert small == small_again == here
    assert large.startswith("test-worker") and always.startswith("test-worker")


def test_without_a_limit_all_work_goes_to_the_worker():
    worker = Worker("test-worker")
    try:
        assert asyncio.run(worker.run_sized(1, _where)).startswith("test-worker")
    finally:
        worker.close()


def test_small_work_waits_for_the_workers_calls_then_runs_here_never_overlapping_them(caplog):
    """A small call that arrives while a large one runs in the worker waits for it, and for a
    large one that came meanwhile, then runs on the calling thread: the tokenizer and the template
    learner are never used by two threads at once, and the pages behind a long one are not handed
    to the thread one by one."""
    worker = Worker("test-worker", inline_below=100)
    release_first, release_second = threading.Event(), threading.Event()
    running: list[str] = []
    overlaps: list[str] = []

    def job(name: str, release: threading.Event | None = None) -> tuple[str, str]:
        if running:
            overlaps.append(name)
        running.append(name)
        if release is not None:
            release.wait(5)
        running.remove(name)
        if name == "failing":
            raise RuntimeError(name)
        return name, _where()

    async def main() -> list[tuple[str, str]]:
        first = asyncio.ensure_future(worker.run_sized(1000, job, "failing", release_first))
        await asyncio.sleep(0.05)  # the large call is running in the worker now
        small = asyncio.ensure_future(worker.run_sized(1, job, "small"))
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(worker.run_sized(1000, job, "second", release_second))
        await asyncio.sleep(0.05)
        assert not small.done()  # not run here meanwhile
        release_first.set()
        with pytest.raises(RuntimeError):
            await first
        await asyncio.sleep(0.05)
        assert not small.done()  # the second large call came before it ran: it waits for that too
        release_second.set()
        return [await second, await small, await worker.run_sized(1, job, "after")]

    try:
        here = threading.current_thread().name
        (second, second_thread), (small, small_thread), (after, after_thread) = asyncio.run(main())
        gc.collect()  # asyncio logs a failure nobody read when its future is collected
    finally:
        worker.close()
    # The failing call's caller saw its error; waiting for it did not make asyncio log it again.
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
    assert (second, small, after) == ("second", "small", "after")
    assert not overlaps
    assert second_thread.startswith("test-worker")
    assert small_thread == after_thread == here


@pytest.mark.e2e
def test_pages_worked_on_here_or_in_threads_come_out_the_same(tmp_path, doc_sites, monkeypatch):
    """A real crawl whose pages are split between the reactor thread and the workers (a limit in
    the middle of the Flask docs' page sizes) stores the same pages and chunks as one with every
    page in the workers."""
    where: list[str] = []
    run_sized = Worker.run_sized

    async def recording(self, size, fn, *args, **kwargs):
        def recorded(*args, **kwargs):
            where.append(_where())
            return fn(*args, **kwargs)
        return await run_sized(self, size, recorded, *args, **kwargs)

    monkeypatch.setattr(Worker, "run_sized", recording)
    server = doc_sites("flask")
    results, threads = {}, {}
    for limit in (0, 20_000):
        where.clear()
        out = tmp_path / str(limit)
        result = crawl("site", server.url, out, settings={**NO_EMBEDDING, "HARVESTER_OFFLOAD_MIN_SIZE": limit})
        assert result.returncode == 0, result.output[-3000:]
        results[limit] = {item["url"]: (item["markdown"], [chunk["text"] for chunk in item["chunks"]])
                          for item in result.items}
        threads[limit] = {name.startswith("harvester-") for name in where}
    assert threads[0] == {True}  # every call in a worker
    assert threads[20_000] == {True, False}  # some in a worker, some on the reactor thread
    assert len(results[0]) > 50
    assert results[20_000] == results[0]
