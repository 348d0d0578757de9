"""Render policy decisions, per-host learning, the browser lookup and launch options, and the
settings checks and wiring that depend on whether a browser is there."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
from scrapy.settings import Settings

from harvester.addon import HarvesterAddon
from harvester.config.checks import InvalidSettings, check_settings
from harvester.extract.classify import PageType, Verdict
from harvester.render.browser import NoBrowser, browser_args, find_browser, launch_options
from harvester.render.frames import Frame, merge_frames, same_site, same_site_iframes
from harvester.render.policy import RenderLearner, context_kwargs, context_name, fallback_reason
from harvester.sites import SiteProfile
from tests.conftest import missing_prerequisite
from tests.crawl import run_scrapy

AUTO = SiteProfile()
SHELL = Verdict(PageType.APP_SHELL, "empty_mount", True)
EMPTY_SCRIPTED = Verdict(PageType.EMPTY, "no_content", True)
EMPTY_STATIC = Verdict(PageType.EMPTY, "no_content", False)
CONTENT = Verdict(PageType.CONTENT, "content", True)
BLOCKED = Verdict(PageType.BLOCKED, "block_title", True)


def decide(verdict: Verdict, profile: SiteProfile = AUTO, status: int = 200, rendered: bool = False,
           low_quality: bool = False) -> str | None:
    return fallback_reason(profile, verdict, status=status, rendered=rendered, low_quality=low_quality)


def test_auto_renders_app_shells_empty_and_low_quality_pages_with_scripts() -> None:
    assert decide(SHELL) == "app_shell"
    assert decide(EMPTY_SCRIPTED) == "empty"
    assert decide(CONTENT, low_quality=True) == "low_quality"
    assert decide(CONTENT) is None
    assert decide(EMPTY_STATIC) is None  # no script: the browser would show the same page


@pytest.mark.parametrize("generator", ["sphinx", "sphinx-rtd", "mkdocs-material", "mdbook", "docbook", "hugo-docsy",
                                       "javadoc", "rustdoc"])
def test_pages_of_generators_that_write_them_whole_never_render(generator: str) -> None:
    assert fallback_reason(AUTO, CONTENT, status=200, rendered=False, low_quality=True, generator=generator) is None
    # A stub page whose sidebar outweighs its line of text reads as an app shell: its scripts
    # still add no text.
    assert fallback_reason(AUTO, SHELL, status=200, rendered=False, generator=generator) is None
    assert fallback_reason(AUTO, EMPTY_SCRIPTED, status=200, rendered=False, generator=generator) is None
    # A page no profile recognised still renders when its content scored low.
    assert fallback_reason(AUTO, CONTENT, status=200, rendered=False, low_quality=True, generator=None) == "low_quality"
    assert fallback_reason(AUTO, SHELL, status=200, rendered=False, generator=None) == "app_shell"
    # Blocked pages are a different matter: a challenge page may stand in for any page.
    assert fallback_reason(replace(AUTO, fallback_on_blocked=True), BLOCKED, status=200, rendered=False,
                           generator=generator) == "blocked"


@pytest.mark.parametrize("generator", ["docusaurus", "vitepress", "gitbook"])
def test_prerendered_app_pages_render_only_when_their_html_held_nothing(generator: str) -> None:
    assert fallback_reason(AUTO, CONTENT, status=200, rendered=False, low_quality=True, generator=generator) is None
    # A route of such an app may be client-only: its shell is all the HTML holds.
    assert fallback_reason(AUTO, SHELL, status=200, rendered=False, generator=generator) == "app_shell"
    assert fallback_reason(AUTO, EMPTY_SCRIPTED, status=200, rendered=False, generator=generator) == "empty"


def test_one_browser_try_per_page_and_only_in_auto() -> None:
    assert decide(SHELL, rendered=True) is None
    assert decide(SHELL, replace(AUTO, render="never")) is None
    assert decide(SHELL, replace(AUTO, render="always")) is None  # already rendered directly


def test_fallback_switches() -> None:
    assert decide(SHELL, replace(AUTO, fallback_enabled=False)) is None
    assert decide(SHELL, replace(AUTO, fallback_on_empty=False)) is None
    assert decide(BLOCKED) is None
    assert decide(BLOCKED, replace(AUTO, fallback_on_blocked=True)) == "blocked"
    assert decide(BLOCKED, replace(AUTO, fallback_on_blocked=True, fallback_enabled=False)) is None


@pytest.mark.parametrize("status", [204, 301, 304, 401, 403, 404, 429, 500, 503])
def test_only_2xx_responses_can_render(status: int) -> None:
    expected = "app_shell" if status == 204 else None
    assert decide(SHELL, status=status) == expected
    assert decide(BLOCKED, replace(AUTO, fallback_on_blocked=True), status=status) == (
        "blocked" if status == 204 else None)


def test_login_walls_and_error_pages_never_render() -> None:
    for verdict in (Verdict(PageType.LOGIN_WALL, "login_form", True), Verdict(PageType.ERROR_PAGE, "soft_404", True)):
        assert decide(verdict, low_quality=True) is None


def test_a_host_goes_browser_direct_after_n_pages_needed_it() -> None:
    learner = RenderLearner(learn_after=2)
    for n in range(3):
        learner.fetched_over_http(f"http://a.test/{n}")
    assert not learner.direct("http://a.test/x")
    assert learner.needed_browser("http://a.test/1") is False
    assert learner.needed_browser("http://a.test/2") is True  # the moment it is learned
    assert learner.needed_browser("http://a.test/3") is False  # reported once
    assert learner.direct("http://a.test/other") and not learner.direct("http://b.test/")
    never = RenderLearner(learn_after=0)
    for n in range(5):
        never.fetched_over_http(f"http://a.test/{n}")
        never.needed_browser(f"http://a.test/{n}")
    assert not never.direct("http://a.test/")


def test_a_site_where_few_pages_need_the_browser_stays_on_http() -> None:
    learner = RenderLearner(learn_after=3)
    for n in range(100):
        learner.fetched_over_http(f"http://docs.test/{n}")
        if n % 10 == 0:
            assert learner.needed_browser(f"http://docs.test/{n}") is False
    assert not learner.direct("http://docs.test/next")


def test_contexts_per_locale_timezone_and_user_agent_block_service_workers() -> None:
    german = replace(AUTO, locale="de-DE", timezone_id="Europe/Berlin", user_agent="UA")
    assert context_name(AUTO) != context_name(german) != context_name(replace(german, user_agent="UA2"))
    kwargs = context_kwargs(german)
    assert kwargs == {"service_workers": "block", "accept_downloads": False, "locale": "de-DE",
                      "timezone_id": "Europe/Berlin", "user_agent": "UA"}
    assert context_kwargs(AUTO)["service_workers"] == "block"


def test_browser_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "chrome"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert find_browser(str(fake)) == str(fake)
    with pytest.raises(NoBrowser, match="playwright install chromium"):
        find_browser(str(tmp_path / "missing"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "none"))
    assert find_browser() is None
    bundled = tmp_path / "pw" / "chromium-1200" / "chrome-linux64" / "chrome"
    bundled.parent.mkdir(parents=True)
    bundled.write_text("")
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "pw"))
    assert find_browser() == ""  # Playwright's own: no executable_path


def test_launch_options() -> None:
    options = launch_options("/usr/bin/chromium", proxy="http://127.0.0.1:1", extra_args=["--x"])
    assert options["headless"] is True and options["executable_path"] == "/usr/bin/chromium"
    assert options["proxy"]["server"] == "http://127.0.0.1:1"
    args = options["args"]
    assert any(a.startswith("--proxy-bypass-list=") and a.endswith(";<-loopback>") for a in args)
    assert any(a.startswith("--host-resolver-rules=MAP accounts.google.com ~NOTFOUND") for a in args)
    assert args[-1] == "--x"
    ours = launch_options("", extra_args=["--host-resolver-rules=MAP * ~NOTFOUND"])["args"]
    assert [a for a in ours if a.startswith("--host-resolver-rules")] == ["--host-resolver-rules=MAP * ~NOTFOUND"]
    assert ("--no-sandbox" in args) == (os.geteuid() == 0)
    assert "executable_path" not in launch_options("")


def test_browser_args_keep_commas() -> None:
    rule = "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"
    assert browser_args(f'["{rule}"]') == [rule]
    assert browser_args(f"'{rule}' --mute-audio") == [rule, "--mute-audio"]
    assert browser_args(None) == [] and browser_args(["a"]) == ["a"]


def test_frames() -> None:
    page = "http://docs.test/guide/"
    assert same_site("http://docs.test:8080/x", page) and same_site("https://docs.test/x", page)
    assert not same_site("http://ads.test/x", page) and not same_site("about:blank", page)
    assert same_site_iframes(["/inner.html", "http://ads.test/a", "about:blank"], page) == ["http://docs.test/inner.html"]
    merged = merge_frames("# Page\n\nBody.", [Frame("http://docs.test/f", "Frame title", "<p>x</p>")],
                          lambda frame: "# Inner\n\nFrame text.")
    assert merged == "# Page\n\nBody.\n\n## Frame title\n\nFrame: <http://docs.test/f>\n\n### Inner\n\nFrame text.\n"


def addon_settings(**values: object) -> Settings:
    settings = Settings()
    for name, value in values.items():
        settings.set(name, value, "cmdline")
    HarvesterAddon().update_settings(settings)
    return settings


def test_handler_and_launch_options_only_when_rendering_can_happen(tmp_path: Path) -> None:
    if find_browser() is None:
        missing_prerequisite("no Chromium here")
    on = addon_settings()
    assert on.getdict("DOWNLOAD_HANDLERS")["https"] == "harvester.render.download.RenderingDownloadHandler"
    assert on.getdict("PLAYWRIGHT_LAUNCH_OPTIONS")["headless"] is True
    assert on.get("PLAYWRIGHT_ABORT_REQUEST") == "harvester.render.handler.abort_heavy_request"
    assert on.getint("PLAYWRIGHT_MAX_PAGES_PER_CONTEXT") == on.getint("HARVESTER_RENDER_CONCURRENCY")
    assert "http" not in addon_settings(HARVESTER_RENDER="never").getdict("DOWNLOAD_HANDLERS")
    missing = addon_settings(HARVESTER_BROWSER_PATH=str(tmp_path / "nope"))
    assert "http" not in missing.getdict("DOWNLOAD_HANDLERS")
    check_settings(missing)  # auto: warns at the first page that needs it, keeps the HTTP result


def test_settings_checks(tmp_path: Path) -> None:
    with pytest.raises(InvalidSettings, match="HARVESTER_RENDER="):
        check_settings(addon_settings(HARVESTER_RENDER="sometimes"))
    with pytest.raises(InvalidSettings, match="HARVESTER_RENDER_WAIT_UNTIL"):
        check_settings(addon_settings(HARVESTER_RENDER_WAIT_UNTIL="idle"))
    with pytest.raises(InvalidSettings, match="HARVESTER_RENDER_CONCURRENCY"):
        check_settings(addon_settings(HARVESTER_RENDER_CONCURRENCY=0))
    with pytest.raises(InvalidSettings, match=r"playwright install chromium.*HARVESTER_BROWSER_PATH"):
        check_settings(addon_settings(HARVESTER_RENDER="always", HARVESTER_BROWSER_PATH=str(tmp_path / "nope")))


@pytest.mark.cli
def test_render_always_without_a_browser_refuses_to_start(tmp_path: Path) -> None:
    process = run_scrapy(["crawl", "docs", "-a", "start=http://127.0.0.1:9/", "-s", "HARVESTER_RENDER=always",
                          "-s", f"HARVESTER_BROWSER_PATH={tmp_path / 'nope'}"], tmp_path, timeout=120)
    assert process.returncode != 0
    assert "playwright install chromium" in process.stderr + process.stdout
    assert "HARVESTER_BROWSER_PATH" in process.stderr + process.stdout


@pytest.mark.e2e
def test_a_crawl_that_renders_nothing_never_imports_playwright(tmp_path: Path) -> None:
    """Rendering is possible (a browser is there, mode auto) but no page needs it: the browser
    handler, scrapy-playwright and Playwright are never imported (about 0.2 s of start-up)."""
    import subprocess
    import sys

    from tests.crawl import REPO, scrapy_env
    from tests.servers.sitesrv import SiteServer

    if find_browser() is None:
        missing_prerequisite("no Chromium here")
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<html><head><title>Plain</title></head><body><main><h1>Plain</h1><p>"
                                     + "A static page whose HTML holds all of its text. " * 10
                                     + "</p></main></body></html>")
    report = tmp_path / "modules.txt"
    code = ("import atexit, sys\n"
            f"atexit.register(lambda: open({str(report)!r}, 'w').write(' '.join(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('playwright', 'scrapy_playwright') or m.startswith('harvester.render.')"
            " and m.split('.')[2] in ('handler', 'download')))))\n"
            "from scrapy.cmdline import execute\n"
            "execute(sys.argv)\n")
    with SiteServer(root=site) as server:
        done = subprocess.run([sys.executable, "-c", code, "crawl", "site", "-a", f"start={server.url}", "-O",
                               str(tmp_path / "pages.jsonl"), "-s", "HARVESTER_EMBEDDING_ENABLED=0",
                               "-s", "HARVESTER_INDEX_ENABLED=0"],
                              cwd=REPO, env=scrapy_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "pages.jsonl").read_text().count("\n") == 1
    assert report.read_text() == "harvester.render.download"  # the handler that could render was there
