"""End to end: a user's site profile directory in real crawls of a loopback site."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.crawl import NO_EMBEDDING, crawl
from tests.servers.sites import doc_page
from tests.servers.sitesrv import Route, SiteServer

pytestmark = pytest.mark.e2e

ARTICLE = ('<div class="article"><h2>The {name} article</h2><p>Only this part of the {name} page is the '
           "article: the profile's content selector picks it and leaves the guide text around it out.</p></div>")
PAGES = ["a", "b", "c"]


def profile_site() -> dict[str, Route]:
    sidebar = [f"/docs/{name}.html" for name in PAGES] + ["/docs/private/secret.html"]
    routes = {f"/docs/{name}.html": Route(doc_page(name, sidebar=sidebar, extra_body=ARTICLE.format(name=name)))
              for name in PAGES}
    routes["/docs/"] = Route(doc_page("index", sidebar=sidebar, extra_body=ARTICLE.format(name="index")))
    routes["/docs/private/secret.html"] = Route(doc_page("secret"))
    routes["/robots.txt"] = Route("User-agent: *\nDisallow:\n", headers={"Content-Type": "text/plain"})
    return routes


def test_a_user_profile_sets_selector_deny_delay_and_user_agent(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "loopback.toml").write_text(
        'description = "the test site"\ncontent_selector = "div.article"\ndeny = ["/private/"]\n'
        'download_delay = 1.0\nuser_agent = "FrobBot/1.0 (+test)"\ncolour = "blue"\n'
        '[match]\ndomains = ["127.0.0.1"]\n')
    with SiteServer(routes=profile_site()) as server:
        result = crawl("docs", server.url + "docs/", tmp_path / "run",
                       settings={**NO_EMBEDDING, "HARVESTER_SITE_PROFILES_DIR": str(profiles)})
    assert result.returncode == 0, result.output[-3000:]
    # content_selector: the article only, not the guide text around it.
    assert {item["url"].rsplit("/", 1)[-1] for item in result.items} == {"", "a.html", "b.html", "c.html"}
    for item in result.items:
        assert "Only this part of the" in item["markdown"]
        assert "explains how the" not in item["markdown"]
    # deny: never requested.
    assert not [path for path in server.paths() if "private" in path]
    # user_agent: every request, robots.txt too.
    assert {hit.user_agent for hit in server.log} == {"FrobBot/1.0 (+test)"}
    # download_delay: a floor under AutoThrottle (on by default) between the page requests.
    times = sorted(hit.time for hit in server.log if hit.path.startswith("/docs/"))
    assert len(times) == 4
    assert min(b - a for a, b in itertools.pairwise(times)) >= 0.9
    # Reported, and the unknown key named once (the crawl command's check loads the profiles too).
    assert result.report["site_profiles"] == {f"127.0.0.1:{server.port}": ["loopback"]}
    assert "'harvester/sites/profile/loopback': 5" in result.output
    assert result.output.count("unknown key 'colour' ignored") == 1
    assert "site profiles:  127.0.0.1" in result.output


def test_without_the_profile_the_same_crawl_differs(tmp_path: Path) -> None:
    """The control: the effects above come from the profile."""
    with SiteServer(routes=profile_site()) as server:
        result = crawl("docs", server.url + "docs/", tmp_path, settings=NO_EMBEDDING)
    assert result.returncode == 0, result.output[-3000:]
    assert any("private" in path for path in server.paths())
    assert all("explains how the" in item["markdown"] for item in result.items)
    assert all(hit.user_agent.startswith("Harvester/") for hit in server.log)
    times = sorted(hit.time for hit in server.log if hit.path.startswith("/docs/"))
    assert min(b - a for a, b in itertools.pairwise(times)) < 0.9  # AutoThrottle alone goes faster
    assert "site_profiles" not in result.report


def test_a_bad_profile_stops_the_crawl_before_it_starts(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    bad = profiles / "bad.toml"
    bad.write_text('render = "sometimes"\n[match]\ndomains = ["127.0.0.1"]\n')
    with SiteServer(routes=profile_site()) as server:
        result = crawl("docs", server.url + "docs/", tmp_path / "run",
                       settings={**NO_EMBEDDING, "HARVESTER_SITE_PROFILES_DIR": str(profiles)})
        assert server.paths() == []
    assert result.returncode == 2
    assert (f"harvester: error: invalid setting: site profile {bad}: render = 'sometimes' must be one of "
            "never, always, auto") in result.output.splitlines()
    assert "Traceback" not in result.output


def test_a_bad_render_argument_stops_the_crawl(tmp_path: Path) -> None:
    result = crawl("docs", "http://127.0.0.1:9/docs/", tmp_path, settings=NO_EMBEDDING, args={"render": "maybe"})
    assert result.returncode == 2
    assert "render must be one of never, always, auto, got 'maybe'" in result.output
