"""Aggregate pages (print-all pages, tag pages): the Scrapy-free detector."""

from __future__ import annotations

import random

import pytest

from harvester.dedup.aggregate import AggregateDetector, sampled_shingles
from harvester.dedup.compact import CompactIntMap

VOCABULARY = [f"w{i}" for i in range(3000)]


def prose(seed: int, words: int = 600) -> str:
    rng = random.Random(seed)
    sentences = []
    while words > 0:
        n = rng.randint(8, 20)
        sentences.append(" ".join(rng.choice(VOCABULARY) for _ in range(n)).capitalize() + ".")
        words -= n
    return " ".join(sentences)


CHAPTERS = {f"/ch{i}.html": f"# Chapter {i}\n\n{prose(i)}" for i in range(10)}
PRINT = "\n\n".join(CHAPTERS.values())


def feed(pages: dict[str, str], share: float = 0.6) -> tuple[AggregateDetector, list[tuple[str, list[str]]]]:
    detector = AggregateDetector(share)
    return detector, [(url, detector.add(url, sampled_shingles(text))) for url, text in pages.items()]


def test_print_page_after_its_chapters_is_an_aggregate_on_arrival() -> None:
    detector, steps = feed({**CHAPTERS, "/print.html": PRINT})
    assert steps[-1] == ("/print.html", ["/print.html"])
    assert all(decided == [] for _, decided in steps[:-1])
    covered, largest = detector.figures("/print.html")
    assert covered > 0.95 and largest < 0.2


def test_print_page_before_its_chapters_is_recognised_when_enough_chapters_arrived() -> None:
    detector, steps = feed({"/print.html": PRINT, **CHAPTERS})
    decided = [(url, found) for url, found in steps if found]
    assert len(decided) == 1
    url, found = decided[0]
    assert found == ["/print.html"]
    # 60% of the book: the 6th chapter makes it (chapters are of similar length).
    assert url in {"/ch5.html", "/ch6.html"}
    assert detector.aggregates == {"/print.html"}


def test_pages_contained_in_several_aggregates_stay() -> None:
    first_half = "\n\n".join(list(CHAPTERS.values())[:5])
    detector, _ = feed({"/print.html": PRINT, "/part1.html": first_half, **CHAPTERS})
    assert detector.aggregates == {"/print.html", "/part1.html"}


def test_copies_of_one_page_are_not_aggregates() -> None:
    text = CHAPTERS["/ch1.html"]
    detector, _ = feed({"/a.html": text, "/b.html": text, "/c.html": text, "/d.html": text + " More words here."})
    assert detector.aggregates == set()


def test_a_page_with_its_own_content_beside_repeated_text_stays() -> None:
    excerpts = "\n\n".join(text[:700] for text in list(CHAPTERS.values())[:4])
    overview = f"# Overview\n\n{prose(99, 1500)}\n\n{excerpts}"
    detector, _ = feed({**CHAPTERS, "/overview.html": overview})
    assert detector.aggregates == set()
    covered, _ = detector.figures("/overview.html")
    assert 0.05 < covered < 0.4


def test_boilerplate_on_every_page_makes_no_aggregate() -> None:
    footer = prose(500, 250)
    pages = {url: f"{text[:400]}\n\n{footer}" for url, text in CHAPTERS.items()}
    detector, _ = feed(pages)
    assert detector.aggregates == set()


def test_link_targets_do_not_hide_a_repeated_paragraph() -> None:
    linked = "See [the setup](setup.html#install) and [the API](api.html) for " + prose(7, 100)
    relinked = "See [the setup](#install) and [the API](#api) for " + prose(7, 100)
    assert sampled_shingles(linked, sample=1) == sampled_shingles(relinked, sample=1)


def test_short_pages_are_never_judged() -> None:
    detector, _ = feed({"/a.html": "one two three", "/b.html": "one two three four five six seven eight nine"})
    assert detector.figures("/a.html") is None
    assert detector.aggregates == set()


def test_share_is_checked() -> None:
    with pytest.raises(ValueError, match="share"):
        AggregateDetector(0)


def test_tag_pages_and_the_archive_that_contains_them_are_aggregates() -> None:
    posts = {f"/post{i}.html": f"# Post {i}\n\n{prose(100 + i, 400)}" for i in range(6)}
    texts = list(posts.values())
    pages = {
        "/archive.html": "\n\n".join(texts),
        "/tag/python.html": "\n\n".join(texts[0:3]),
        "/tag/web.html": "\n\n".join(texts[2:5]),
        **posts,
    }
    detector, _ = feed(pages)
    assert detector.aggregates == {"/archive.html", "/tag/python.html", "/tag/web.html"}


def test_a_page_whose_footer_is_on_every_page_and_body_on_a_later_one_is_no_aggregate() -> None:
    """Only the first MAX_OWNERS pages of a shingle are remembered: a version of a page crawled
    first, its body repeated by the next version crawled after ten other pages, shares its footer
    with every page. The later version explains all of it (the footer is boilerplate: any page
    does), so it is no aggregate (before the fix, the footer counted against the later version)."""
    footer = prose(99, 250)
    pages = {"/en/1.2/api.html": f"{prose(7, 400)}\n\n{footer}"}
    pages.update({f"/topic{i}.html": f"{prose(20 + i, 300)}\n\n{footer}" for i in range(10)})
    pages["/en/1.3/api.html"] = pages["/en/1.2/api.html"].replace("w", "w", 1) + " One more line."
    detector, _ = feed(pages)
    assert detector.aggregates == set()
    covered, largest = detector.figures("/en/1.2/api.html")
    assert covered > 0.95 and largest > 0.95


def test_an_owner_map_answers_as_a_dict_would_across_merges() -> None:
    """As the detector uses its passage owners: a first owner put for new keys, replaced by a list
    that then grows in place."""
    rng = random.Random(5)
    owners, expected = CompactIntMap(value_bits=32, fresh_limit=3, key_type="int64"), {}
    for page in range(200):
        keys = {rng.randrange(-(2**63), 2**63) if rng.random() < 0.5 else rng.randrange(400) for _ in range(6)}
        for key, found in zip(list(keys), owners.get_many(list(keys)), strict=True):
            assert found == expected.get(key) == owners.get(key)
            if found is None:
                owners.put_new([key], page)
                expected[key] = page
            elif isinstance(found, int):
                owners[key] = expected[key] = [found, page]
            else:
                found.append(page)
    assert all(owners[key] == value for key, value in expected.items())
    with pytest.raises(KeyError):
        owners[2**40 + 1]


def test_what_the_detector_keeps_per_sampled_shingle_is_small() -> None:
    """Every sampled shingle and passage of a crawl has an owner: the single owners lie in sorted
    arrays, not a dict of ints (about 70 bytes a shingle before, the int objects included)."""
    import tracemalloc

    rng = random.Random(6)
    detector = AggregateDetector(0.95)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for page in range(400):
            shingles = {rng.getrandbits(32) for _ in range(200)}
            detector.add(f"/p{page}.html", shingles, [rng.getrandbits(63) for _ in range(20)])
            del shingles
        per_hash = (tracemalloc.get_traced_memory()[0] - start) / (400 * 220)
    finally:
        tracemalloc.stop()
    assert per_hash < 45
