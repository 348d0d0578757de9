"""``scrapy search``, ``scrapy mcp``, ``scrapy export`` and ``scrapy compact`` check their settings as a crawl does: a bad
value stops the command with one line naming it and exit status 2, before any store is opened."""

from __future__ import annotations

import pytest

from tests.crawl import scrapy_command

COMMANDS = [
    ["search", "how do routes work"],
    ["mcp"],
    ["export", "--to-edge", "elsewhere"],
    ["compact"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: command[0])
def test_a_bad_setting_stops_the_command_with_one_line(tmp_path, command: list[str]) -> None:
    done = scrapy_command([*command, "-s", "HARVESTER_QDRANT_WAIT=soon"], tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == "harvester: error: invalid setting: HARVESTER_QDRANT_WAIT='soon' must be a number"
    assert not (tmp_path / "qdrant").exists()


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: command[0])
def test_a_rule_across_settings_is_checked_too(tmp_path, command: list[str]) -> None:
    done = scrapy_command([*command, "-s", "HARVESTER_QDRANT_PATH="], tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == ("harvester: error: invalid setting: set HARVESTER_QDRANT_PATH (local store) "
                                   "or QDRANT_URL (server)")
