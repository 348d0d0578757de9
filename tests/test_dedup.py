"""One copy of everything: URL canonicalisation, MinHash near duplicates, the boilerplate rule,
version limits, and the dedup and boilerplate pipelines on small stand-in items."""

from __future__ import annotations

import asyncio

import pytest
from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from harvester.addon import HarvesterAddon
from harvester.config.checks import InvalidSettings, check_settings
from harvester.dedup.detect import (
    BoilerplateCounter,
    NearDuplicates,
    VersionRule,
    shingles,
    signature,
    text_key,
)
from harvester.dedup.pipeline import BoilerplatePipeline, DedupPipeline
from harvester.exceptions import DuplicatePage, NearDuplicatePage
from harvester.index.store import boilerplate_point_id, chunk_payload, point_id
from harvester.items import PageItem
from harvester.report.extension import format_summary
from harvester.signals import chunks_superseded, page_aliased, page_near_duplicate
from harvester.urls.canonical import (
    DEFAULT_STRIP,
    ServedForms,
    canonical_url,
    compile_strip_params,
    page_key,
    path_form,
)
from harvester.urls.fingerprint import CanonicalRequestFingerprinter
from tests.servers.sites import _API_WORDS


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://Docs.Example.COM/Guide.html", "http://docs.example.com/Guide.html"),
        ("http://h.com:80/a.html", "http://h.com/a.html"),
        ("https://h.com:443/a.html", "https://h.com/a.html"),
        ("https://h.com:8443/a.html", "https://h.com:8443/a.html"),
        ("http://h.com/a.html#install", "http://h.com/a.html"),
        ("http://h.com/a?b=2&a=1", "http://h.com/a?a=1&b=2"),
        ("http://h.com/a?utm_source=x&utm_medium=email&UTM_Campaign=y&page=2", "http://h.com/a?page=2"),
        ("http://h.com/a?gclid=1&fbclid=2&mc_cid=3&mc_eid=4&msclkid=5&_ga=6", "http://h.com/a"),
        ("http://h.com/a;jsessionid=0A1B2C?x=1", "http://h.com/a?x=1"),
        ("http://h.com/a?PHPSESSID=abc&sid=9&sessionid=1&v=2", "http://h.com/a?v=2"),
        ("http://h.com/a?q=sid", "http://h.com/a?q=sid"),  # a value is never stripped
        ("http://h.com/a?side=1", "http://h.com/a?side=1"),  # names match whole
    ],
)
def test_canonical_url(url, expected):
    assert canonical_url(url) == expected


def test_strip_params_are_configurable():
    assert canonical_url("http://h/a?utm_source=x", None) == "http://h/a?utm_source=x"
    only_ref = compile_strip_params("ref,src")
    assert canonical_url("http://h/a?ref=1&src=2&utm_source=x", only_ref) == "http://h/a?utm_source=x"
    with pytest.raises(ValueError, match="invalid URL parameter pattern"):
        compile_strip_params(["("])


def test_page_key_folds_index_and_trailing_slash_spellings():
    same = ["http://h/docs/", "http://h/docs", "http://h/docs/index.html", "http://h/docs/index.htm",
            "http://h/docs/?utm_source=x", "http://h:80/docs/#top"]
    assert {page_key(url) for url in same} == {"http://h/docs"}
    assert page_key("http://h/") == page_key("http://h/index.html") == "http://h/"
    assert page_key("http://h/docs/a.html") != page_key("http://h/docs/")
    assert page_key("http://h/docs/myindex.html") == "http://h/docs/myindex.html"


def test_served_forms_are_learned_from_redirects_per_host():
    forms = ServedForms()
    assert forms.preferred("http://h/b/index.html") == "http://h/b/index.html"  # nothing learned yet
    assert not forms.learn("http://h/a.html", "http://h/b.html")  # not a spelling of the same page
    assert forms.learn("http://h/a/index.html", "http://h/a/")
    assert forms.preferred("http://h/b/index.html") == "http://h/b/"
    assert forms.preferred("http://other/b/index.html") == "http://other/b/index.html"
    assert forms.preferred("http://h/b/page.html") == "http://h/b/page.html"
    assert forms.learn("http://h/c/", "http://h/c/index.htm")
    assert forms.preferred("http://h/d/") == "http://h/d/index.htm"
    # A bare path may be a file served without extension: never respelled.
    assert forms.learn("http://h/e", "http://h/e/")
    assert forms.preferred("http://h/f") == "http://h/f"
    assert [path_form(p) for p in ("/a/", "/a/index.html", "/a", "/a/b.html")] == ["slash", "index", "bare", None]


def test_fingerprints_follow_canonical_urls_but_keep_redirect_targets_apart():
    fingerprinter = CanonicalRequestFingerprinter()
    fp = fingerprinter.fingerprint
    assert fp(Request("http://h/a.html?utm_source=x#f")) == fp(Request("http://h:80/a.html"))
    assert fp(Request("http://h/a.html;jsessionid=1")) == fp(Request("http://h/a.html"))
    assert fp(Request("http://h/a/")) != fp(Request("http://h/a/index.html"))
    assert fp(Request("http://h/a?page=2")) != fp(Request("http://h/a?page=3"))
    verbatim = Request("http://h/a.html?utm_source=x", meta={"verbatim_url": True})
    assert fp(verbatim) != fp(Request("http://h/a.html"))
    crawler = get_crawler(settings_dict={"ADDONS": {HarvesterAddon: 0}})
    assert crawler.settings.get("REQUEST_FINGERPRINTER_CLASS").endswith("CanonicalRequestFingerprinter")


def test_shingles_and_minhash_similarity():
    assert shingles("One two, THREE four", 2) == {"one two", "two three", "three four"}
    assert shingles("short", 5) == {"short"} and shingles("", 5) == set()
    text = _API_WORDS * 2
    one_word = text.replace("paranoid checks", "thorough checks", 1)
    other = "Sessions keep cookies across requests and reuse the underlying connection pool. " * 3
    assert signature(text).jaccard(signature(one_word)) > 0.9
    assert signature(text).jaccard(signature(other)) < 0.2


def test_shingle_hashes_tell_shingles_apart_and_estimate_jaccard_on_real_pages():
    """A shingle's hash is combined from its words' hashes: equal n-grams hash equal, distinct ones
    (tens of thousands on real docs pages) collide no more than 32-bit hashes must, and the MinHash built from them
    estimates the true shingle Jaccard of real pages as closely as a hash of each shingle's text."""
    import itertools
    import re
    from pathlib import Path

    from harvester.dedup.shingles import shingle_hashes, word_hashes

    words = [w for page in sorted(Path("/usr/share/doc/python-flask-doc/html").glob("*.html"))[:20]
             for w in re.findall(r"\w+", page.read_text(errors="replace").casefold())]
    for size in (1, 5, 8):
        texts = [" ".join(words[i:i + size]) for i in range(len(words) - size + 1)]
        hashes = shingle_hashes(word_hashes(words), size).tolist()
        assert len(hashes) == len(texts) and max(hashes) < 2**32
        by_text = dict(zip(texts, hashes))
        assert all(by_text[text] == h for text, h in zip(texts, hashes))  # equal n-grams, equal hashes
        # Distinct n-grams collide only as often as any 32-bit hash would: about n**2 / 2**33 times,
        # one for the 93,000 5-grams here (an order-blind or word-dropping combination: thousands).
        assert len(by_text) - len(set(by_text.values())) <= 1 + len(by_text) ** 2 // 2**32
    assert len(shingle_hashes(word_hashes(["a", "b"]), 5)) == 0
    with pytest.raises(ValueError):
        shingle_hashes(word_hashes(["a"]), 0)

    pages = [p.read_text(errors="replace") for p in
             sorted(Path("/usr/share/doc/python-flask-doc/html/deploying").glob("*.html"))]
    errors = []
    for a, b in itertools.combinations(pages, 2):
        sa, sb = shingles(a, 5), shingles(b, 5)
        true = len(sa & sb) / len(sa | sb)
        if true > 0.1:
            errors.append(abs(signature(a).jaccard(signature(b)) - true))
    assert len(errors) >= 5 and max(errors) < 0.15 and sum(errors) / len(errors) < 0.05


def test_minhash_and_its_lsh_bands():
    """The LSH bands are the layouts datasketch chose for these thresholds (its error integrals,
    equal weights); a signature ignores repeats and order; the empty text has one of its own."""
    import numpy as np

    from harvester.dedup.minhash import MinHash, MinHashIndex, band_layout

    assert band_layout(0.9, 128) == (5, 25) and band_layout(0.5, 128) == (25, 5)
    from harvester.dedup.minhash import _KNOWN_LAYOUTS, _best_layout

    # The layouts a crawl takes as known still are what the integrals give.
    assert all(_best_layout(*key) == layout for key, layout in _KNOWN_LAYOUTS.items())
    assert band_layout(0.8, 128) == (9, 13) and band_layout(0.3, 64) == (21, 3)
    hashes = np.array([5, 17, 2**32 - 2, 99], dtype=np.uint64)
    same = MinHash.of(np.concatenate([hashes[::-1], hashes]))
    assert MinHash.of(hashes).jaccard(same) == 1.0
    assert MinHash.of(hashes[:2]).jaccard(MinHash.of(hashes[2:])) < 0.1
    assert signature("").jaccard(signature("")) == 1.0 and signature("").jaccard(signature("words")) == 0.0
    index = MinHashIndex(0.9)
    index.insert("a", MinHash.of(hashes))
    assert index.query(same) == {"a"} and index.query(MinHash.of(hashes[:1])) == set()
    # Over several batches: each permutation's minimum, (a*x + b mod 2**64) >> 32, of all hashes.
    from harvester.dedup.minhash import _permutations

    many = np.random.default_rng(7).integers(0, 2**32, size=5000, dtype=np.uint64)
    multipliers, offsets = _permutations(128)
    expected = ((many[:, None] * multipliers + offsets) >> np.uint64(32)).min(axis=0).astype(np.uint32)
    assert (MinHash.of(many).values == expected).all()


def test_near_duplicate_signatures_and_aggregate_shingles_share_the_words_without_link_targets():
    """The same text linking to another version of the site is the same to both; the words of a
    page are cut and hashed once for the two of them."""
    from harvester.dedup.aggregate import sampled_shingles
    from harvester.dedup.shingles import markdown_word_hashes

    paragraph = ("Configure the [session](https://h/{v}/api.html#session) as the [guide](../{v}/guide.html) "
                 "says, then call ![a diagram](img/{v}.png) the route. ") * 20
    v1, v2 = paragraph.format(v="v1"), paragraph.format(v="v2")
    assert (signature(v1).values == signature(v2).values).all()
    assert sampled_shingles(v1) == sampled_shingles(v2)
    assert signature(v1).jaccard(signature(paragraph.format(v="v1").replace("route", "path"))) < 1.0
    markdown_word_hashes.cache_clear()
    signature(v1)
    sampled_shingles(v1)
    assert markdown_word_hashes.cache_info()[:2] == (1, 1)  # one hit, one miss
    assert not markdown_word_hashes(v1).flags.writeable


def test_near_duplicates_report_the_most_similar_original():
    index = NearDuplicates(0.8)
    base = " ".join(f"word{i}" for i in range(300))
    index.add("a", signature(base))
    index.add("b", signature(base.replace("word150", "x")))
    assert index.match(signature(" ".join(f"other{i}" for i in range(300)))) is None
    found = index.match(signature(base.replace("word150", "x").replace("word10 ", "y ")))
    assert found is not None and found[0] == "b" and found[1] > 0.9
    with pytest.raises(ValueError, match="threshold"):
        NearDuplicates(1.5)


def test_boilerplate_needs_min_pages_and_the_share_and_the_decision_holds():
    counter = BoilerplateCounter(share=0.5, min_pages=3)
    for page in range(2):
        counter.observe(["notice", f"own{page}"])
        assert not counter.is_boilerplate("notice")
        counter.remember("notice", f"id{page}")
    counter.observe(["notice", "own2", "notice"])  # twice on one page counts once
    assert counter.is_boilerplate("notice")  # 3 of 3 pages
    assert counter.earlier("notice") == ["id0", "id1"] and counter.earlier("notice") == []
    for page in range(3, 12):
        counter.observe([f"own{page}"])
    assert counter.is_boilerplate("notice")  # 3 of 12 pages now, but decided
    rare = BoilerplateCounter(share=0.5, min_pages=3)
    for page in range(10):
        rare.observe(["tip"] if page % 3 == 0 else [f"own{page}"])
    assert not rare.is_boilerplate("tip")  # on 4 pages (enough) but 4/10 is under the share
    with pytest.raises(ValueError):
        BoilerplateCounter(share=0, min_pages=3)
    with pytest.raises(ValueError):
        BoilerplateCounter(share=0.5, min_pages=1)


def test_boilerplate_counter_keeps_little_per_chunk_text_and_gives_its_ids_back():
    """Every chunk text of a crawl is counted and its chunk id kept until it is decided: a 64-bit
    key, a count and the id's 128 bits in numpy arrays (a dict of Python ints: about 170 bytes)."""
    import tracemalloc

    counter = BoilerplateCounter(share=0.3, min_pages=5)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for page in range(300):
            keys = [text_key(f"paragraph {i} of page {page}") for i in range(10)]
            counter.observe(keys)
            for i, key in enumerate(keys):
                counter.remember(key, point_id(f"http://h/{page}", i))
        per_text = (tracemalloc.get_traced_memory()[0] - start) / 3000
    finally:
        tracemalloc.stop()
    assert per_text < 100, per_text
    key = text_key("paragraph 3 of page 7")
    assert key == text_key(" paragraph 3\n of  page 7 ") and isinstance(key, int)
    counter.remember(key, "not-a-uuid")
    assert counter.earlier(key) == [point_id("http://h/7", 3), "not-a-uuid"] and counter.earlier(key) == []


def test_version_rule():
    first = VersionRule(r"/en/(\d+(?:\.\d+)*|latest)/")
    assert first.allows("http://h/docs/en/1.3/api.html")
    assert not first.allows("http://h/docs/en/1.2/api.html")
    assert first.allows("http://h/docs/en/1.3/other.html") and first.allows("http://h/docs/about.html")
    chosen = VersionRule(r"/v(?P<version>\d+)/", "2")
    assert not chosen.allows("http://h/v1/a.html") and chosen.allows("http://h/v2/a.html")
    assert VersionRule(None).allows("http://h/en/1.2/")
    with pytest.raises(ValueError, match="invalid version pattern"):
        VersionRule("(")


def crawler_with(**settings):
    return get_crawler(settings_dict={"ADDONS": {HarvesterAddon: 0}, **settings})


def item(url, content_hash="h1", markdown="# A\n\ntext", aliases=()):
    return PageItem(url=url, title="A", markdown=markdown, content_hash=content_hash, aliases=list(aliases))


def run(coroutine):
    return asyncio.run(coroutine)


def listen(crawler, signal):
    heard = []
    crawler.signals.connect(lambda **kw: heard.append(kw), signal=signal, weak=False)
    return heard


def test_exact_duplicates_become_aliases_of_the_stored_page():
    crawler = crawler_with()
    pipeline = build_from_crawler(DedupPipeline, crawler)
    aliased = listen(crawler, page_aliased)
    first = run(pipeline.process_item(item("http://h/a/", aliases=["http://h/a/index.html"])))
    with pytest.raises(DuplicatePage, match="same content as http://h/a/"):
        run(pipeline.process_item(item("http://h/print/a.html", aliases=["http://h/old-a.html"])))
    with pytest.raises(DuplicatePage):
        run(pipeline.process_item(item("http://h/a/", content_hash="changed")))
    # The stored item is still in flight here, so its feed line shows every alias.
    assert first.aliases == ["http://h/a/index.html", "http://h/print/a.html", "http://h/old-a.html"]
    assert pipeline.aliases["http://h/a/"] == first.aliases
    assert [h["alias"] for h in aliased] == first.aliases and {h["url"] for h in aliased} == {"http://h/a/"}
    assert crawler.stats.get_value("harvester/dedup/aliases") == 3
    assert crawler.stats.get_value("harvester/dedup/same_content") == 1


def test_duplicates_can_go_to_the_feed_as_duplicate_of_lines():
    pipeline = build_from_crawler(DedupPipeline, crawler_with(HARVESTER_DEDUP_FEED_DUPLICATES=True))
    run(pipeline.process_item(item("http://h/a.html")))
    line = run(pipeline.process_item(item("http://h/b.html")))
    assert line.duplicate_of == "http://h/a.html" and line.chunks == []


def versioned(url, word):
    text = (_API_WORDS * 2).replace("paranoid checks", f"{word} checks", 1)
    return item(url, content_hash=word, markdown=text)


def test_near_duplicates_are_marked_or_dropped():
    crawler = crawler_with()
    near = listen(crawler, page_near_duplicate)
    keep = build_from_crawler(DedupPipeline, crawler)
    run(keep.process_item(versioned("http://h/en/1.2/api.html", "paranoid")))
    marked = run(keep.process_item(versioned("http://h/en/1.3/api.html", "thorough")))
    assert marked.near_duplicate_of == "http://h/en/1.2/api.html"
    assert near[0]["url"] == "http://h/en/1.3/api.html" and near[0]["similarity"] >= 0.9
    other = run(keep.process_item(item("http://h/x.html", "x", "Completely different words " * 20)))
    assert other.near_duplicate_of is None

    drop = build_from_crawler(DedupPipeline, crawler_with(HARVESTER_NEAR_DUPLICATE_MODE="drop"))
    run(drop.process_item(versioned("http://h/en/1.2/api.html", "paranoid")))
    with pytest.raises(NearDuplicatePage, match=r"similar to http://h/en/1\.2/api\.html"):
        run(drop.process_item(versioned("http://h/en/1.3/api.html", "thorough")))
    off = build_from_crawler(DedupPipeline, crawler_with(HARVESTER_NEAR_DUPLICATE_THRESHOLD=0))
    run(off.process_item(versioned("http://h/en/1.2/api.html", "paranoid")))
    assert run(off.process_item(versioned("http://h/en/1.3/api.html", "thorough"))).near_duplicate_of is None


def chunked(url, texts):
    page = item(url)
    page.chunks = [{"id": point_id(url, i), "index": i, "text": t, "heading_path": [], "context": "A",
                    "token_count": 3} for i, t in enumerate(texts)]
    return page


def test_boilerplate_pipeline_stores_a_repeated_chunk_once_and_supersedes_earlier_copies():
    crawler = crawler_with(HARVESTER_BOILERPLATE_MIN_PAGES=3, HARVESTER_BOILERPLATE_SHARE=0.5)
    superseded = listen(crawler, chunks_superseded)
    pipeline = build_from_crawler(BoilerplatePipeline, crawler)
    notice = "> **Warning:** Frob 1.x reaches its end of life."
    pages = [pipeline.process_item(chunked(f"http://h/{i}.html", [f"own {i}", notice])) for i in range(5)]
    assert [len(p.chunks) for p in pages] == [2, 2, 2, 1, 1]
    once = pages[2].chunks[1]
    assert once["id"] == boilerplate_point_id(notice) == boilerplate_point_id(notice.replace(" ", "  "))
    assert once["boilerplate"] and once["context"] == ""
    assert superseded == [{"ids": [point_id("http://h/0.html", 1), point_id("http://h/1.html", 1)],
                           "signal": chunks_superseded, "sender": superseded[0]["sender"]}]
    stats = crawler.stats
    assert stats.get_value("harvester/boilerplate/texts") == 1
    assert stats.get_value("harvester/boilerplate/chunks") == 3
    assert stats.get_value("harvester/boilerplate/embeddings_saved") == 2
    assert stats.get_value("harvester/boilerplate/earlier_copies") == 2
    payload = chunk_payload(pages[2], once, "2026-01-01T00:00:00+00:00")
    assert payload["metadata"]["boilerplate"] is True and payload["metadata"]["aliases"] == []


def test_boilerplate_drop_mode_and_off():
    crawler = crawler_with(HARVESTER_BOILERPLATE_MIN_PAGES=2, HARVESTER_BOILERPLATE_MODE="drop")
    pipeline = build_from_crawler(BoilerplatePipeline, crawler)
    pages = [pipeline.process_item(chunked(f"http://h/{i}.html", [f"own {i}", "footer"])) for i in range(3)]
    assert [[c["text"] for c in p.chunks] for p in pages] == [["own 0", "footer"], ["own 1"], ["own 2"]]
    with pytest.raises(NotConfigured):
        build_from_crawler(BoilerplatePipeline, crawler_with(HARVESTER_BOILERPLATE_MODE="off"))


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [("HARVESTER_NEAR_DUPLICATE_THRESHOLD", "2", "between 0"),
     ("HARVESTER_NEAR_DUPLICATE_MODE", "maybe", "one of"),
     ("HARVESTER_BOILERPLATE_MODE", "twice", "one of"),
     ("HARVESTER_BOILERPLATE_SHARE", "0", "above 0"),
     ("HARVESTER_BOILERPLATE_MIN_PAGES", "1", "at least 2"),
     ("HARVESTER_VERSION_PATTERN", "(", "invalid version pattern"),
     ("HARVESTER_URL_STRIP_PARAMS", "[", "invalid URL parameter")],
)
def test_bad_dedup_settings_are_refused(name, value, words):
    settings = Settings()
    HarvesterAddon().update_settings(settings)
    settings.set(name, value, "cmdline")
    with pytest.raises(InvalidSettings, match=words):
        check_settings(settings)


def test_summary_shows_dedup_figures():
    text = format_summary({
        "spider": "docs", "finish_reason": "finished", "pages_crawled": 5, "pages_stored": 3,
        "pages_skipped": 1, "skipped_by_reason": {}, "pages_failed": 0, "failed_by_reason": {},
        "chunks_stored": 12, "elapsed_seconds": 2.5, "aliases": 4, "near_duplicates": 1,
        "boilerplate_chunks": 7, "embeddings_saved": 9,
    }, None)
    assert "4 aliases, 1 near duplicates, 7 boilerplate chunks, 9 embeddings saved" in text


def test_default_strip_matches_the_documented_families():
    assert DEFAULT_STRIP is not None
    for name in ("utm_source", "utm_content", "gclid", "fbclid", "mc_cid", "jsessionid", "PHPSESSID", "sid"):
        assert DEFAULT_STRIP.fullmatch(name), name
    for name in ("page", "q", "version", "side", "utm"):
        assert not DEFAULT_STRIP.fullmatch(name), name


def test_components_are_registered_in_order():
    settings = crawler_with().settings
    from tests.components import components

    pipelines = components(settings, "ITEM_PIPELINES")
    from harvester.chunking.pipeline import ChunkingPipeline
    from harvester.embedding.pipeline import EmbeddingPipeline

    assert pipelines[DedupPipeline] < pipelines[ChunkingPipeline] < pipelines[BoilerplatePipeline]
    assert pipelines[BoilerplatePipeline] < pipelines[EmbeddingPipeline]
    from harvester.urls.middleware import ServedUrlMiddleware

    assert ServedUrlMiddleware in components(settings, "SPIDER_MIDDLEWARES")
