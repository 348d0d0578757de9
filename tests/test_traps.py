"""Crawl-trap rules (harvester/urls/traps.py) and the other pure rules for hostile input."""

from __future__ import annotations

from datetime import UTC, datetime

from harvester.fetch.encoding import corrected_encoding
from harvester.fetch.retryafter import retry_after_seconds
from harvester.urls.traps import (
    TrapDetector,
    TrapLimits,
    date_template,
    query_family,
    repeated_segment,
)

BASE = "http://docs.example.com"


def test_repeating_segments() -> None:
    assert repeated_segment("/docs/loop/loop/loop/loop/", 3) == "loop"
    assert repeated_segment("/a/b/a/b/a/b/a/b", 3) in ("a", "b")
    assert repeated_segment("/docs/loop/loop/loop/", 3) is None
    assert repeated_segment("/docs/api/v1/api.html", 3) is None
    assert repeated_segment("/", 3) is None


def test_date_templates_group_a_calendar_but_not_dated_articles() -> None:
    assert date_template(f"{BASE}/cal/2031/07/") == date_template(f"{BASE}/cal/1999/12/")
    assert date_template(f"{BASE}/events?month=2031-07") == date_template(f"{BASE}/events?month=2032-01")
    assert date_template(f"{BASE}/blog/2024/05/one-post.html") != date_template(f"{BASE}/blog/2024/05/another.html")
    assert date_template(f"{BASE}/docs/page-12.html") is None  # no year, not a date


def test_query_family_ignores_parameter_order() -> None:
    assert query_family(f"{BASE}/list?b=2&a=1") == query_family(f"{BASE}/list?a=1&b=2")
    assert query_family(f"{BASE}/list") is None


def test_endless_calendar_is_cut_at_its_limit() -> None:
    detector = TrapDetector(TrapLimits(max_date_variants=12))
    verdicts = [detector.check(f"{BASE}/cal/{2020 + m // 12}-{m % 12 + 1:02d}.html") for m in range(40)]
    assert verdicts[:12] == [None] * 12 and set(verdicts[12:]) == {"calendar"}
    assert detector.check(f"{BASE}/cal/2020-01.html") is None  # a variant seen before is no new trap
    # Dated articles each have their own family.
    assert all(detector.check(f"{BASE}/blog/2024/05/{word}.html") is None for word in "abcdefghijklmnopqrstuvwxyz")


def test_query_explosion_is_cut_per_path() -> None:
    detector = TrapDetector(TrapLimits(max_query_variants=5))
    verdicts = [detector.check(f"{BASE}/list.html?p={i}&sort=asc") for i in range(8)]
    assert verdicts == [None] * 5 + ["query_explosion"] * 3
    assert detector.check(f"{BASE}/other.html?p=1") is None


def test_page_cap_per_host() -> None:
    detector = TrapDetector(TrapLimits(max_pages_per_host=3))
    assert [detector.check(f"{BASE}/p{i}.html") for i in range(4)] == [None, None, None, "page_cap"]
    assert detector.check(f"{BASE}/p1.html") is None  # yielded again: not a new page
    assert detector.check("http://other.example.com/p.html") is None


def test_bounded_memory_under_an_endless_family() -> None:
    detector = TrapDetector(TrapLimits(max_query_variants=10))
    for i in range(10000):
        detector.check(f"{BASE}/list.html?p={i}")
    assert sum(len(v) for v in detector._queries.values()) == 10


def test_mislabelled_encodings_are_corrected() -> None:
    text = "Café, naïve, Straße — “quoted”"
    assert corrected_encoding(text.encode("utf-8"), "iso-8859-1") == "utf-8"
    assert corrected_encoding(text.encode("utf-8"), "cp1252") == "utf-8"
    assert corrected_encoding(text.encode("cp1252"), "utf-8") == "cp1252"
    assert corrected_encoding(text.encode("utf-8"), "utf-8") is None
    assert corrected_encoding(text.encode("cp1252"), "cp1252") is None
    assert corrected_encoding(b"plain ascii", "latin-1") is None
    assert corrected_encoding("日本語".encode("shift_jis"), "shift_jis") is None


def test_retry_after_values() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("7", now) == 7.0
    assert retry_after_seconds("Thu, 01 Jan 2026 12:00:30 GMT", now) == 30.0
    assert retry_after_seconds("Thu, 01 Jan 2026 11:00:00 GMT", now) == 0.0
    assert retry_after_seconds("soon", now) is None
    assert retry_after_seconds("", now) is None
