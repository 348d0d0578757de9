"""``scrapy search``'s own handling of its command line and its cold start, in this process."""

from __future__ import annotations

from typing import Any

import pytest

from harvester.commands.search import Command
from tests.crawl import scrapy_command


@pytest.mark.parametrize(("argv", "query"), [
    (["--", "-s or custom_settings: which wins?"], "-s or custom_settings: which wins?"),
    (["-k", "3", "--", "why -- twice"], "why -- twice"),
    (["how", "do", "routes", "work"], "how do routes work"),
])
def test_the_query_is_searched_without_the_double_dash(tmp_path, monkeypatch, argv: list[str], query: str) -> None:
    # Scrapy leaves "--" among a command's arguments; embedded, it moved the query's vector.
    asked: list[str] = []

    def search(self: Command, settings: Any, text: str, *args: Any) -> list[dict[str, Any]]:
        asked.append(text)
        return []

    monkeypatch.setattr(Command, "_search", search)
    done = scrapy_command(["search", "--json", *argv], tmp_path)
    assert done.returncode == 0, done.stderr
    assert asked == [query]
