"""The settings spec: one table from which defaults, checks, the environment, site-profile keys and
the settings reference come; and the add-on checking every crawler, however it is started."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from harvester.addon import DEFAULTS, HarvesterAddon
from harvester.config import reference
from harvester.config.checks import InvalidSettings, check_settings
from harvester.config.spec import ENVIRONMENT, PROFILE_SETTINGS, SETTINGS, SPEC, defaults
from harvester.config.types import Bool, Choice, Float, Int, Optional, Text, TextList
from harvester.sites import PROFILE_KEYS
from harvester.sites.loader import CHECKS

REPO = Path(__file__).resolve().parent.parent
SETTING_NAME = re.compile(r"[\"'](HARVESTER_[A-Z0-9_]+|QDRANT_[A-Z_]+|REDIS_URL)[\"']")


def test_every_setting_the_code_reads_is_in_the_spec() -> None:
    named = set()
    for path in (REPO / "harvester").rglob("*.py"):
        named.update(SETTING_NAME.findall(path.read_text(encoding="utf-8")))
    assert named, "the pattern found no setting at all"
    unknown = named - set(SETTINGS) - set(ENVIRONMENT)
    assert not unknown, f"settings read in harvester/ but missing from the spec: {sorted(unknown)}"


def test_defaults_env_and_profile_keys_come_from_the_spec() -> None:
    assert DEFAULTS == defaults()
    assert {s.name for s in SPEC} >= set(DEFAULTS)
    # The environment variable the old hand-written list forgot.
    assert ENVIRONMENT["HARVESTER_EMBEDDING_BACKEND"] == "HARVESTER_EMBEDDING_BACKEND"
    assert ENVIRONMENT["HARVESTER_LOG_LEVEL"] == "LOG_LEVEL"
    assert {k: v for k, v in PROFILE_KEYS.items() if v} == PROFILE_SETTINGS
    assert set(CHECKS) == set(PROFILE_KEYS)


@pytest.mark.cli
def test_environment_variables_reach_the_settings() -> None:
    code = ("from scrapy.utils.project import get_project_settings; s = get_project_settings(); "
            "print(s['HARVESTER_EMBEDDING_BACKEND'], s['LOG_LEVEL'], s['HARVESTER_RENDER'])")
    env = {"HARVESTER_EMBEDDING_BACKEND": "onnx", "HARVESTER_LOG_LEVEL": "WARNING", "HARVESTER_RENDER": "never",
           "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["onnx", "WARNING", "never"]


def test_the_reference_and_env_example_are_written_from_the_spec() -> None:
    assert (REPO / reference.REFERENCE_PATH).read_text() == reference.settings_reference(), (
        "docs/settings.md is stale: run python -m harvester.config.reference")
    assert (REPO / reference.ENV_EXAMPLE_PATH).read_text() == reference.env_example(), (
        "settings/env.example is stale: run python -m harvester.config.reference")
    text = reference.settings_reference()
    for setting in SPEC:
        assert f"| `{setting.name}` |" in text


@pytest.mark.parametrize(("value_type", "text", "value"), [
    (Bool(), "0", False), (Bool(), "True", True), (Int(minimum=1), "3", 3), (Float(minimum=0), "0.5", 0.5),
    (TextList(), "a, b,", ["a", "b"]), (Optional(Text()), "", None), (Choice(("x", "y")), "y", "y"),
])
def test_settings_are_read_leniently(value_type, text, value) -> None:
    assert value_type.parse(text) == value


@pytest.mark.parametrize(("value_type", "value", "words"), [
    (Bool(), "true", "must be true or false"), (Int(minimum=1), 1.5, "must be an integer"),
    (Float(minimum=0), "2", "must be a number"), (Optional(Text()), "", "must be a non-empty string"),
    (Float(minimum=0), -1, "must not be negative"), (Int(minimum=2), 1, "must be at least 2"),
])
def test_profile_values_are_read_strictly(value_type, value, words) -> None:
    with pytest.raises(ValueError, match=words):
        value_type.parse(value, strict=True)


def test_every_default_passes_its_own_check() -> None:
    settings = Settings()
    HarvesterAddon().update_settings(settings)
    check_settings(settings)
    for setting in SPEC:
        setting.type.parse(setting.default)


@pytest.mark.parametrize(("name", "value", "words"), [
    ("HARVESTER_EMBEDDING_BATCH_SIZE", "0", "HARVESTER_EMBEDDING_BATCH_SIZE='0' must be at least 1"),
    ("HARVESTER_EMBEDDING_BACKEND", "tensorflow", "must be one of auto, torch, onnx, onnx-int8"),
    ("HARVESTER_BROWSER_LOCALE", "english!", "must be a locale"),
    ("HARVESTER_CONTENT_SELECTORS", '{"a.com": "div[["}', "invalid CSS selector"),
])
def test_the_addon_stops_a_crawler_with_a_bad_setting(name, value, words) -> None:
    with pytest.raises(InvalidSettings, match=re.escape(words)):
        get_crawler(settings_dict={"ADDONS": {HarvesterAddon: 0}, name: value})
    assert get_crawler(settings_dict={"ADDONS": {HarvesterAddon: 0}}).settings.getbool("ROBOTSTXT_OBEY")


def test_the_addon_sets_the_process_settings() -> None:
    settings = Settings({"ADDONS": {HarvesterAddon: 0}})
    from scrapy.addons import AddonManager

    AddonManager.load_pre_crawler_settings(settings)
    assert settings["TWISTED_DNS_RESOLVER"] == "harvester.guard.resolver.GuardedResolver"
    assert settings["LOG_LEVEL"] == "INFO"


SPIDER = """
import scrapy

class Probe(scrapy.Spider):
    name = "probe"
    start_urls = ["http://127.0.0.1:9/"]
"""


@pytest.mark.cli
def test_runspider_refuses_a_bad_setting_with_exit_2(tmp_path: Path) -> None:
    spider = tmp_path / "probe.py"
    spider.write_text(SPIDER)
    process = subprocess.run([sys.executable, "-m", "scrapy", "runspider", str(spider), "-s",
                              "HARVESTER_DEDUP_ENABLED=perhaps"], cwd=REPO, capture_output=True, text=True,
                             timeout=120)
    assert process.returncode == 2, process.stderr
    errors = [line for line in process.stderr.splitlines() if "error" in line.lower()]
    assert errors == ["harvester: error: invalid setting: HARVESTER_DEDUP_ENABLED='perhaps' must be true or false"]
    assert "Traceback" not in process.stderr


@pytest.mark.cli
def test_a_script_with_the_addon_is_checked_too(tmp_path: Path) -> None:
    script = tmp_path / "run.py"
    script.write_text(SPIDER + textwrap.dedent("""
        from scrapy.crawler import CrawlerProcess
        from harvester.addon import HarvesterAddon

        process = CrawlerProcess({"ADDONS": {HarvesterAddon: 0}, "HARVESTER_EMBEDDING_BATCH_SIZE": 0})
        process.crawl(Probe)
        process.start()
        raise SystemExit(1 if process.bootstrap_failed else 0)
    """))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=120)
    assert process.returncode == 1, process.stderr
    assert "harvester: error: invalid setting: HARVESTER_EMBEDDING_BATCH_SIZE=0 must be at least 1" in process.stderr
    assert "Spider opened" not in process.stderr
