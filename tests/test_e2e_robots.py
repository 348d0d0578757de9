"""robots.txt per RFC 9309 in real crawls: what each answer of the server means."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.crawl import NO_EMBEDDING, crawl
from tests.servers.sites import robots_site
from tests.servers.sitesrv import Route, SiteServer

pytestmark = pytest.mark.e2e

RULES = "User-agent: *\nDisallow: /docs/private/\n"
TEXT = {"Content-Type": "text/plain"}
FAST = {**NO_EMBEDDING, "HARVESTER_CRAWL_DELAY_ENABLED": "0", "RETRY_TIMES": "1"}


def redirects(hops: int) -> dict[str, Route]:
    """/robots.txt redirects `hops` times, then serves the rules."""
    routes = {"/robots.txt": Route(b"", 301, {"Location": "/r1.txt" if hops else "/rules.txt"})}
    for hop in range(1, hops):
        routes[f"/r{hop}.txt"] = Route(b"", 302, {"Location": f"/r{hop + 1}.txt"})
    if hops:
        routes[f"/r{hops}.txt"] = Route(b"", 302, {"Location": "/rules.txt"})
    routes["/rules.txt"] = Route(RULES, headers=TEXT)
    return routes


# Protego, like Google's parser, also reads common typos ("Disalow", a missing colon) as rules.
MALFORMED = ("\ufeffUser-agent: *\n<html>oops</html>\nNonsense line\n:::\nDisallow: /docs/private/\n"
             "\x00\x01 binary junk\nCrawl-delay: soon\n")
CASES = {
    # name: (robots routes, is /docs/private/ crawled?)
    "unavailable_404": ({"/robots.txt": Route("<h1>Not found</h1>", 404)}, True),
    "five_redirects_followed": (redirects(4), False),  # /robots.txt + 4 hops + rules = 5 redirects
    "six_redirects_is_unavailable": (redirects(5), True),
    "malformed_lines_ignored": ({"/robots.txt": Route(MALFORMED, headers=TEXT)}, False),
    "rules_past_the_size_cap_ignored": (
        {"/robots.txt": Route("# padding\n" * 60_000 + RULES, headers=TEXT)}, True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_robots_answers(case: str, tmp_path: Path) -> None:
    robots, private_crawled = CASES[case]
    routes = {**robots_site(crawl_delay=0), **robots}
    with SiteServer(routes=routes) as server:
        result = crawl("site", server.url + "docs/", tmp_path, settings=FAST)
    assert result.returncode == 0, result.output[-3000:]
    paths = server.paths()
    assert ("/docs/private/secret.html" in paths) is private_crawled, paths
    assert "/docs/one.html" in paths and "/docs/two.html" in paths
    if case == "six_redirects_is_unavailable":
        assert "/rules.txt" not in paths


@pytest.mark.parametrize("status", [503, 429])
def test_unreachable_robots_means_nothing_is_crawled(status: int, tmp_path: Path) -> None:
    routes = {**robots_site(crawl_delay=0), "/robots.txt": Route("<h1>down</h1>", status)}
    with SiteServer(routes=routes) as server:
        result = crawl("site", server.url + "docs/", tmp_path, settings=FAST)
    assert set(server.paths()) == {"/robots.txt"}
    assert result.returncode == 1
    assert f"crawling nothing on 127.0.0.1:{server.port}" in result.output
    assert f"Forbidden by robots.txt: it is unreachable (http_{status})" in result.output


def test_rules_are_fetched_again_when_their_cache_time_is_over(tmp_path: Path) -> None:
    with SiteServer(routes={**robots_site(crawl_delay=0), "/robots.txt": Route(RULES, headers=TEXT)}) as server:
        result = crawl("site", server.url + "docs/", tmp_path,
                       settings={**FAST, "HARVESTER_ROBOTSTXT_CACHE_SECONDS": "0"})
    paths = server.paths()
    assert result.returncode == 0, result.output[-3000:]
    # Fetched again once stale (requests waiting on a fetch in flight share it).
    assert paths.count("/robots.txt") >= 2
    assert "/docs/private/secret.html" not in paths
