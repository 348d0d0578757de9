"""The test harness itself: an in-process crawl is the ``scrapy crawl`` command's crawl, a crawl that
hangs is stopped, and nothing one crawl leaves in the process changes the next."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.crawl import NO_EMBEDDING, cli_crawl, crawl
from tests.inprocess import CrawlTimeout
from tests.servers.sites import chain_site, doc_page
from tests.servers.sitesrv import Route, SiteServer


def normalised(output: str, workdir: Path) -> list[str]:
    """The log's lines without what differs between two runs: times, numbers, addresses, paths."""
    lines = []
    for line in output.splitlines():
        line = line.replace(str(workdir), "WORKDIR")
        line = re.sub(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", "", line)
        line = re.sub(r"0x[0-9a-f]+|\d+(\.\d+)?", "N", line)
        # LogStats leaves the per-minute rates at None for a crawl shorter than its first interval.
        line = re.sub(r"(_per_minute': )None", r"\1N", line)
        lines.append(line)
    return sorted(lines)


def items(feed: list[dict]) -> list[dict]:
    return sorted(({k: v for k, v in item.items() if k != "fetched_at"} for item in feed), key=lambda i: i["url"])


@pytest.mark.cli
def test_an_in_process_crawl_is_the_commands_crawl(tmp_path: Path) -> None:
    """Same exit status, items, report and log (times, numbers and paths aside) as the real command,
    for a crawl that succeeds and one the command refuses."""
    with SiteServer(routes=chain_site()) as server:
        start = server.url + "docs/p1.html"
        inside = crawl("docs", start, tmp_path / "in", settings=NO_EMBEDDING)
        outside = cli_crawl("docs", start, tmp_path / "out", settings=NO_EMBEDDING)
    assert inside.returncode == outside.returncode == 0, inside.output[-3000:]
    assert items(inside.items) == items(outside.items)
    assert set(inside.report) == set(outside.report)
    assert (inside.report["failed"], inside.report["pages_stored"]) == (outside.report["failed"],
                                                                        outside.report["pages_stored"])
    assert normalised(inside.output, tmp_path / "in") == normalised(outside.output, tmp_path / "out")

    refused = {"HARVESTER_DEDUP_ENABLED": "perhaps"}
    inside = crawl("docs", start, tmp_path / "in2", settings=refused)
    outside = cli_crawl("docs", start, tmp_path / "out2", settings=refused)
    assert inside.returncode == outside.returncode == 2
    error = "harvester: error: invalid setting: HARVESTER_DEDUP_ENABLED='perhaps' must be true or false"
    assert error in inside.output.splitlines() and error in outside.output.splitlines()


def test_a_crawl_past_its_timeout_is_stopped_and_the_next_one_runs(tmp_path: Path) -> None:
    routes = {
        "/robots.txt": Route("User-agent: *\nDisallow:\n"),
        "/docs/": Route(doc_page("index", sidebar=["/docs/slow.html"])),
        # 16 bytes every 0.5 s: 192 bytes take 6 s, longer than the timeout below.
        "/docs/slow.html": Route("<html><body><p>" + "slow " * 33 + "</p></body></html>", drip=0.5),
    }
    with SiteServer(routes=routes) as server:
        started = time.monotonic()
        with pytest.raises(CrawlTimeout, match="ran past 3 s and was stopped"):
            crawl("docs", server.url + "docs/", tmp_path / "slow", settings=NO_EMBEDDING, timeout=3)
        assert time.monotonic() - started < 60
        server.routes["/docs/slow.html"] = Route(doc_page("slow"))
        result = crawl("docs", server.url + "docs/", tmp_path / "again", settings=NO_EMBEDDING)
    assert result.returncode == 0, result.output[-3000:]
    assert len(result.items) == 2


def test_a_crawl_timed_out_while_its_spider_opens_is_stopped_once_it_runs(tmp_path: Path, monkeypatch) -> None:
    """Scrapy drops a stop that comes before the engine runs: the harness waits for the engine,
    stops it, and waits for the crawl's end before the next one starts."""
    import asyncio

    from harvester.extract.template_hold import TemplateHold

    opened = TemplateHold._spider_opened

    async def slowly_opened(self, spider):  # type: ignore[no-untyped-def]
        await asyncio.sleep(4)
        opened(self, spider)

    monkeypatch.setattr(TemplateHold, "_spider_opened", slowly_opened)
    with SiteServer(routes=chain_site()) as server:
        with pytest.raises(CrawlTimeout, match=r"Spider closed \(shutdown\)"):
            crawl("docs", server.url + "docs/p1.html", tmp_path / "slow", settings=NO_EMBEDDING, timeout=1)
        monkeypatch.setattr(TemplateHold, "_spider_opened", opened)
        result = crawl("docs", server.url + "docs/p1.html", tmp_path / "again", settings=NO_EMBEDDING)
    assert result.returncode == 0, result.output[-3000:]
    assert result.items


def test_warn_once_state_does_not_outlive_a_crawl(tmp_path: Path) -> None:
    """A deprecation a crawl warns about once per process is warned about in every crawl."""
    settings = {**NO_EMBEDDING, "HARVESTER_PROXY_MODE": "direct", "HARVESTER_PROXY": "http://127.0.0.1:9"}
    first = crawl("docs", "http://127.0.0.1:9/docs/", tmp_path / "one", settings=settings)
    second = crawl("docs", "http://127.0.0.1:9/docs/", tmp_path / "two", settings=settings)
    for result in (first, second):
        assert result.output.count("HARVESTER_PROXY_MODE=direct is deprecated") == 1, result.output[-3000:]
