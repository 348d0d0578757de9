"""Re-crawls: page state from the index, conditional requests, chunk diffs, deletions, pruning,
sitemap lastmod, and JOBDIR resume after SIGKILL. Unit tests first, then real crawls on loopback."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harvester.index.store import chunk_point_id
from harvester.recrawl.state import StoredPage, pages_from_points, prune_candidates, unchanged_since
from tests.conftest import qdrant_points
from tests.crawl import REPO, crawl, scrapy_env
from tests.servers.recrawl_site import EditableSite
from tests.servers.sitesrv import Route, SiteServer


def payload(url: str, index: int, total: int, content_hash: str = "h1", etag: str | None = '"e1"',
            links: list[str] | None = None) -> dict:
    body = {"page_content": "t", "metadata": {
        "source_url": url, "etag": etag, "last_modified": None, "content_hash": content_hash,
        "harvested_at": "2026-01-05T12:00:00+00:00", "chunk_index": index, "total_chunks": total}}
    if links is not None:
        body["links"] = links
    return body


def test_chunk_ids_follow_the_text_not_the_position():
    url = "http://h/docs/a.html"
    assert chunk_point_id(url, "intro") == chunk_point_id(url, "intro")
    assert chunk_point_id(url, "intro") != chunk_point_id("http://h/docs/b.html", "intro")
    assert chunk_point_id(url, "intro") != chunk_point_id(url, "intro", 1), "a repeated text gets its own id"
    assert chunk_point_id(url, "intro") != chunk_point_id(url, "intro.")


def test_page_state_is_rebuilt_from_chunk_payloads():
    points = [("a0", payload("http://h/a", 0, 2, links=["http://h/b"])), ("a1", payload("http://h/a", 1, 2)),
              ("b0", payload("http://h/b", 0, 1, etag=None))]
    pages = pages_from_points(points)
    assert pages["http://h/a"].chunk_ids == {"a0", "a1"}
    assert pages["http://h/a"].links == ["http://h/b"]
    assert pages["http://h/a"].validators == {"If-None-Match": '"e1"'}
    assert pages["http://h/b"].validators == {}
    assert all(page.consistent for page in pages.values())


@pytest.mark.parametrize("points", [
    # killed between writing the new chunks and deleting the old ones
    [("a0", payload("http://h/a", 0, 2)), ("a1", payload("http://h/a", 1, 2)), ("x", payload("http://h/a", 0, 1, "h0"))],
    # killed in the middle of a batch: one of two chunks written
    [("a0", payload("http://h/a", 0, 2))],
])
def test_a_half_written_page_is_fetched_again_without_validators(points):
    page = pages_from_points(points)["http://h/a"]
    assert not page.consistent
    assert page.validators == {}


def test_sitemap_lastmod_against_the_harvest_time():
    harvested = "2026-01-05T12:00:00+00:00"
    assert unchanged_since("2026-01-05T11:00:00Z", harvested)
    assert unchanged_since("2026-01-05T12:00:00+00:00", harvested)
    assert not unchanged_since("2026-01-05T12:00:01+00:00", harvested)
    assert not unchanged_since("2026-01-05", harvested), "a bare date covers the whole day"
    assert unchanged_since("2026-01-04", harvested)
    assert not unchanged_since("yesterday", harvested)
    assert not unchanged_since(None, harvested)


def test_prune_candidates_are_wanted_stored_pages_not_reached():
    stored = ["http://h/docs/a", "http://h/docs/b", "http://h/blog/c"]
    assert prune_candidates(stored, {"http://h/docs/a"}, lambda url: "/docs/" in url) == ["http://h/docs/b"]
    assert StoredPage("u").validators == {}


# End to end: real crawls through every component into local Qdrant.

def index_state(workdir: Path) -> dict[str, dict]:
    """Point id -> payload without the harvest timestamp."""
    state = {}
    for point in qdrant_points(workdir / "qdrant"):
        body = dict(point.payload)
        body["metadata"] = {k: v for k, v in body["metadata"].items() if k != "harvested_at"}
        state[str(point.id)] = body
    return state


def urls_in(state: dict[str, dict]) -> set[str]:
    return {body["metadata"]["source_url"] for body in state.values()}


@pytest.mark.e2e
def test_recrawl_embeds_only_what_changed_and_the_index_follows_the_site(tmp_path):
    """The real model: unchanged site -> all 304, nothing embedded; then an edit, a 404, an unlinked
    page, a new page and a page whose ETag changed without its content; the index ends equal to a
    fresh crawl of the site as it is now. Each crawl's feed says what happened to every page."""
    site = EditableSite(["alpha", "beta", "gamma", "delta"])
    with SiteServer(routes=site.routes) as server:
        start = server.url + "docs/index.html"
        first = crawl("docs", start, tmp_path / "w")
        after_first = index_state(tmp_path / "w")
        second = crawl("docs", start, tmp_path / "w")
        after_second = {str(p.id): p.payload for p in qdrant_points(tmp_path / "w" / "qdrant")}
        beta_before = {i for i, b in after_first.items() if b["metadata"]["source_url"].endswith("/beta.html")}

        site.edit("beta", 2, "One new sentence about beta.")
        site.delete("gamma")
        site.unlink("delta")
        site.add("epsilon")
        site.publish(server)
        third = crawl("docs", start, tmp_path / "w")
        after_third = index_state(tmp_path / "w")
        fresh = crawl("docs", start, tmp_path / "fresh")
        fresh_state = index_state(tmp_path / "fresh")

    assert first.returncode == second.returncode == third.returncode == fresh.returncode == 0, third.output[-3000:]
    assert first.report["recrawl"]["new"] == 5 and first.report["recrawl"]["chunks_embedded"] == len(after_first)

    # Nothing changed: every stored page answers 304, nothing is extracted, embedded or written.
    assert second.report["recrawl"]["unchanged_304"] == 5
    assert second.report["pages_crawled"] == 0 and second.report["recrawl"]["chunks_embedded"] == 0
    assert "harvester/embedding/chunks" not in second.output
    # The feed still lists every page: unchanged (304), with what the collection holds of it.
    stored_hashes = {b["metadata"]["source_url"]: b["metadata"]["content_hash"] for b in after_first.values()}
    assert {line["url"]: (line["change"], line["status"], line["content_hash"]) for line in second.items} == {
        url: ("unchanged", 304, content_hash) for url, content_hash in stored_hashes.items()}
    assert all(line["title"] and "chunks" not in line for line in second.items)
    assert second.report["pages_stored"] == 0, "the feed lines are not stored pages"
    assert {i: {**b, "metadata": {k: v for k, v in b["metadata"].items() if k != "harvested_at"}}
            for i, b in after_second.items()} == after_first

    recrawl = third.report["recrawl"]
    assert recrawl["new"] == 1 and recrawl["updated"] == 1 and recrawl["deleted"] == 1 and recrawl["pruned"] == 1
    # index and alpha: only their sidebars changed (new ETag, same extracted content).
    assert recrawl["unchanged_hash"] == 2
    assert recrawl["pruned_urls"] == [site.url(server.url, "delta")]
    beta_after = {i for i, b in after_third.items() if b["metadata"]["source_url"].endswith("/beta.html")}
    epsilon = {i for i, b in after_third.items() if b["metadata"]["source_url"].endswith("/epsilon.html")}
    changed_beta = beta_after - beta_before
    assert len(changed_beta) == 1, "one edited section, one new chunk"
    assert recrawl["chunks_embedded"] == len(changed_beta) + len(epsilon)
    assert recrawl["chunks_reused"] == len(after_third) - len(changed_beta) - len(epsilon)
    assert len(beta_before - beta_after) == 1, "the edited section's old chunk is deleted"
    assert urls_in(after_third) == {site.url(server.url, n) for n in ("index", "alpha", "beta", "epsilon")}
    assert after_third == fresh_state, "a re-crawled index equals a fresh crawl of the site as it is now"
    assert {item["url"]: item["change"] for item in first.items} == dict.fromkeys(stored_hashes, "new")
    changes = {line["url"]: (line["change"], line["status"]) for line in third.items}
    assert changes == {site.url(server.url, "index"): ("unchanged", 200), site.url(server.url, "alpha"): ("unchanged", 200),
                       site.url(server.url, "beta"): ("changed", 200), site.url(server.url, "epsilon"): ("new", 200),
                       site.url(server.url, "gamma"): ("removed", 404), site.url(server.url, "delta"): ("removed", None)}


@pytest.mark.e2e
def test_no_pruning_after_a_capped_crawl_and_a_dry_run_only_lists(tmp_path):
    site = EditableSite(["alpha", "beta", "gamma"], sections=1)
    with SiteServer(routes=site.routes) as server:
        start = server.url + "docs/index.html"
        assert crawl("docs", start, tmp_path).returncode == 0
        stored = index_state(tmp_path)
        site.unlink("gamma")
        site.blank("beta")
        site.publish(server)
        capped = crawl("docs", start, tmp_path, settings={"HARVESTER_MAX_PAGES": 1, "HARVESTER_CONDITIONAL_REQUESTS": 0})
        after_capped = urls_in(index_state(tmp_path))
        dry = crawl("docs", start, tmp_path, settings={"HARVESTER_PRUNE_DRY_RUN": 1})
        after_dry = urls_in(index_state(tmp_path))
        real = crawl("docs", start, tmp_path)
        after_real = urls_in(index_state(tmp_path))
    beta, gamma = site.url(server.url, "beta"), site.url(server.url, "gamma")
    assert capped.report["finish_reason"] == "max_pages" and capped.report["recrawl"]["pruned"] == 0
    assert after_capped == urls_in(stored)
    # gamma is no longer linked; beta is, but it has no content any more.
    assert dry.report["recrawl"]["would_prune_urls"] == [beta, gamma] and {beta, gamma} <= after_dry
    assert "would be pruned" in dry.output
    assert real.report["recrawl"]["pruned_urls"] == [beta, gamma]
    assert after_real == urls_in(stored) - {beta, gamma}


@pytest.mark.e2e
def test_site_spider_follows_the_stored_links_of_pages_that_answer_304(tmp_path):
    site = EditableSite(["alpha", "beta", "gamma"], sections=1)
    with SiteServer(routes=site.routes) as server:
        start = server.url + "docs/index.html"
        first = crawl("site", start, tmp_path)
        stored = index_state(tmp_path)
        second = crawl("site", start, tmp_path)
    assert first.returncode == 0 and second.returncode == 0, second.output[-3000:]
    assert first.report["recrawl"]["new"] == 4
    assert second.report["recrawl"]["unchanged_304"] == 4 and second.report["recrawl"]["pruned"] == 0
    assert index_state(tmp_path) == stored


def sitemap_routes(site: EditableSite, lastmod: dict[str, str]) -> dict[str, Route]:
    entries = "".join(
        f"<url><loc>{{base}}{site.path(name)}</loc><lastmod>{stamp}</lastmod></url>" for name, stamp in lastmod.items()
    )
    body = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    return {**site.routes, "/docs/sitemap.xml": Route(body, headers={"Content-Type": "application/xml"})}


@pytest.mark.e2e
def test_sitemap_lastmod_skips_unchanged_pages_and_keeps_them(tmp_path):
    site = EditableSite(["alpha", "beta"], sections=1)
    with SiteServer(routes={}) as server:
        base = server.url.rstrip("/")

        def publish(stamps: dict[str, str]) -> None:
            routes = sitemap_routes(site, stamps)
            body = routes["/docs/sitemap.xml"].body.replace("{base}", base)
            server.routes = {**routes, "/docs/sitemap.xml": Route(body, headers={"Content-Type": "application/xml"})}

        publish({"alpha": "2020-01-01", "beta": "2020-01-01"})
        first = crawl("sitemap", server.url + "docs/", tmp_path, settings={"HARVESTER_CONDITIONAL_REQUESTS": 0})
        stored = index_state(tmp_path)
        publish({"alpha": "2020-01-01", "beta": "2999-01-01T00:00:00Z"})
        # Learning off: with one changed page, it would fetch alpha whole to learn the site's
        # template from (tests/test_e2e_template.py); this test counts the fetches lastmod saves.
        second = crawl("sitemap", server.url + "docs/", tmp_path, settings={
            "HARVESTER_CONDITIONAL_REQUESTS": 0, "HARVESTER_TEMPLATE_LEARNING": 0})
        fetched = [p for p in server.paths() if p.endswith(".html")]
        off = crawl("sitemap", server.url + "docs/", tmp_path,
                    settings={"HARVESTER_CONDITIONAL_REQUESTS": 0, "HARVESTER_SITEMAP_LASTMOD_SKIP": 0})
    assert first.returncode == 0 and first.report["recrawl"]["new"] == 2
    assert second.returncode == 0
    assert second.report["recrawl"]["sitemap_lastmod_skipped"] == 1
    assert fetched.count("/docs/alpha.html") == 1 and fetched.count("/docs/beta.html") == 2
    assert second.report["recrawl"]["pruned"] == 0, "a page skipped by lastmod is reached"
    assert index_state(tmp_path) == stored
    assert off.report["recrawl"]["sitemap_lastmod_skipped"] == 0 and off.report["pages_crawled"] == 2


# Pause and resume.

def slow(routes: dict[str, Route], delay: float) -> dict:
    def delayed(route: Route):
        def serve() -> Route:
            time.sleep(delay)
            return route
        return serve
    return {path: delayed(route) if path.endswith(".html") else route for path, route in routes.items()}


def start_crawl(start: str, workdir: Path, jobdir: Path, **settings: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"start={start}", "-s", f"JOBDIR={jobdir}"]
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    return subprocess.Popen(command, cwd=REPO, env=scrapy_env(workdir), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.e2e
@pytest.mark.cli
def test_a_crawl_killed_at_random_and_resumed_ends_with_the_uninterrupted_index(tmp_path, tiny_model):
    """SIGKILL at a random moment (several seeds) while pages are being fetched and indexed, then
    the same command again: the index equals an uninterrupted crawl's, point for point. The last
    seed kills a re-crawl of a changed site (edited pages, one page gone)."""
    names = [f"page{n:02d}" for n in range(12)]
    site = EditableSite(names, sections=2)
    older = EditableSite([*names, "obsolete"], sections=2)
    for name in names[:6]:
        older.edit(name, 1, "Text of the previous release.")
    settings = {"HARVESTER_QDRANT_BATCH_SIZE": "6", "CONCURRENT_REQUESTS_PER_DOMAIN": "2",
                "DUPEFILTER_CLASS": "tests.servers.recrawl_site.FlushingDupeFilter",
                # Resuming is not about vectors: the small model loads and embeds in a blink.
                "HARVESTER_EMBEDDING_MODEL": tiny_model}
    with SiteServer(routes=slow(site.routes, 0.15)) as server:
        start = server.url + "docs/index.html"
        reference = crawl("docs", start, tmp_path / "reference", settings=settings)
        assert reference.returncode == 0, reference.output[-2000:]
        expected = index_state(tmp_path / "reference")
        assert len(urls_in(expected)) == len(names) + 1
        for seed in (1, 2, 3):
            rng = random.Random(seed)
            work, jobdir = tmp_path / f"seed{seed}", tmp_path / f"seed{seed}" / "job"
            if seed == 3:
                server.routes = slow(older.routes, 0.0)
                assert crawl("docs", start, work, settings=settings).returncode == 0
                server.routes = slow(site.routes, 0.15)
            served = len(server.paths())
            process = start_crawl(start, work, jobdir, **settings)
            # Kill after a random number of pages were served, and a random fraction of a second.
            pages_before_kill = rng.randint(1, len(names))
            deadline = time.monotonic() + 120
            while len(server.paths()) - served < pages_before_kill and process.poll() is None:
                assert time.monotonic() < deadline, "the crawl never started"
                time.sleep(0.02)
            time.sleep(rng.random() * 0.5)
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            assert (jobdir / "harvester-running").exists(), "the killed crawl left its marker"
            resumed = start_crawl(start, work, jobdir, **settings)
            _, errors = resumed.communicate(timeout=300)
            assert resumed.returncode == 0, errors[-3000:]
            assert index_state(work) == expected, f"seed {seed}: the resumed index differs"
            assert not (jobdir / "harvester-running").exists()


@pytest.mark.e2e
@pytest.mark.cli
def test_a_paused_crawl_resumes_from_its_jobdir(tmp_path, tiny_model):
    """One SIGINT (Scrapy's pause): the job is saved; the same command resumes it, and pruning
    knows the pages the first half reached."""
    names = [f"page{n:02d}" for n in range(10)]
    site = EditableSite(names, sections=1)
    # One request at a time, so most of them wait in the scheduler's disk queue when it pauses. A
    # small template sample: pages reach the index before the pause, and the ones waiting for the
    # template then are saved in JOBDIR and fetched again on resume.
    settings = {"CONCURRENT_REQUESTS": "1", "AUTOTHROTTLE_ENABLED": "0", "HARVESTER_TEMPLATE_SAMPLE": "3",
                "HARVESTER_EMBEDDING_MODEL": tiny_model}
    with SiteServer(routes=slow(site.routes, 0.3)) as server:
        start = server.url + "docs/index.html"
        reference = crawl("docs", start, tmp_path / "reference", settings=settings)
        expected = index_state(tmp_path / "reference")
        work, jobdir = tmp_path / "paused", tmp_path / "paused" / "job"
        served = len(server.paths())
        process = start_crawl(start, work, jobdir, **settings)
        while len(server.paths()) - served < 4 and process.poll() is None:
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=120)
        assert (jobdir / "requests.seen").exists() and not (jobdir / "harvester-running").exists()
        paused_urls = urls_in(index_state(work))
        resumed = start_crawl(start, work, jobdir, **settings)
        _, errors = resumed.communicate(timeout=300)
    assert reference.returncode == 0 and resumed.returncode == 0, errors[-3000:]
    assert 0 < len(paused_urls) < len(names) + 1
    assert index_state(work) == expected
    assert not (jobdir / "requests.seen").exists(), "a finished job leaves a clean JOBDIR"


def test_autothrottle_lowers_its_delay_after_a_304():
    """A re-crawl of an unchanged site gets only 304s; they must not pin the start delay."""
    from scrapy.core.downloader import Slot
    from scrapy.http import Response
    from scrapy.utils.misc import build_from_crawler
    from scrapy.utils.test import get_crawler

    from harvester.addon import HarvesterAddon
    from harvester.fetch.throttle import CrawlDelayThrottle

    throttle = build_from_crawler(CrawlDelayThrottle, get_crawler(settings_dict={"ADDONS": {HarvesterAddon: 0}}))
    throttle.mindelay, throttle.maxdelay = 0.0, 60.0  # set when the spider opens
    for status, lowered in ((304, True), (500, False)):
        slot = Slot(concurrency=8, delay=0.5, jitter=0)
        throttle._adjust_delay(slot, 0.01, Response("http://h/a", status=status))
        assert (slot.delay < 0.5) is lowered, status


@pytest.mark.parametrize(("reason", "dry_run", "deleted"), [
    ("finished", False, ["http://h/docs/b", "http://h/docs/c"]),
    ("finished", True, []),
    ("max_pages", False, []),
    ("shutdown", False, []),
])
def test_pruning_only_after_a_finished_crawl(reason, dry_run, deleted):
    """b is no longer reached, c was fetched but not indexed again, d answered 404 (deleted
    already), e is out of the crawl's scope."""
    from types import SimpleNamespace

    from scrapy.utils.misc import build_from_crawler
    from scrapy.utils.test import get_crawler

    from harvester.addon import HarvesterAddon
    from harvester.recrawl.extension import Recrawl

    crawler = get_crawler(settings_dict={"ADDONS": {HarvesterAddon: 0}, "HARVESTER_PRUNE_DRY_RUN": dry_run})
    recrawl = build_from_crawler(Recrawl, crawler)
    recrawl.load({url: StoredPage(url) for url in
                  ("http://h/docs/a", "http://h/docs/b", "http://h/docs/c", "http://h/docs/d", "http://h/blog/e")})
    calls = []
    recrawl.set_pruner(calls.append)
    for url in ("http://h/docs/a", "http://h/docs/c", "http://h/docs/d"):
        recrawl.reach(url)
    recrawl.fetched.update({"http://h/docs/a", "http://h/docs/c"})
    recrawl.indexed.add("http://h/docs/a")
    recrawl.mark_gone("http://h/docs/d")
    assert recrawl.take_gone() == ["http://h/docs/d"]
    recrawl._spider_closed(SimpleNamespace(wants=lambda url: "/docs/" in url), reason)
    assert calls == ([deleted] if deleted else [])
    if dry_run:
        assert recrawl.summary()["would_prune_urls"] == ["http://h/docs/b", "http://h/docs/c"]
