"""The tokenizer chunking counts word pieces with: a model's own ``tokenizer.json``, read from its
folder without loading the model.

Scrapy-free, and free of torch and transformers: the chunking pipeline, the ONNX backend and the
query encoder of ``scrapy search`` use it.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from array import array
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvester.embedding.folder import resolve_model

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

# Characters per piece a page is encoded in, and pieces per call (see ModelTokenizer.token_starts).
_PIECE_CHARS = 2000
_PIECES_PER_BATCH = 32
# A page is counted by runs: the text between whitespace as BERT knows it (space, tab, line ends
# and the Unicode space separators, which its normalizer makes spaces), and each non-ASCII
# punctuation mark on its own. BERT's pre-tokenizer cuts at all of them, so a run's tokens are the
# same wherever it stands (a CJK sentence ends at "。" with no space after it: that is a run's end).
# ASCII punctuation stays inside its run: the chunker cuts nothing there but whitespace.


@functools.cache
def _run_pattern() -> re.Pattern[str]:
    """The pattern of runs, with one capturing group around the whole match (``split`` returns the
    runs between the gaps). Built on first use: finding the spaces and punctuation of the Basic
    Multilingual Plane is costly, which a command that chunks nothing need not pay. Only that plane: a class reaching past it makes the regex several times slower
    (a run holding rarer punctuation is then counted whole, still exactly)."""
    # The plane but its surrogates (neither spaces nor punctuation), decoded at once rather than a
    # chr() per code point.
    codes = array("H", range(0x80, 0xD800))
    codes.extend(range(0xE000, 0x10000))
    plane = codes.tobytes().decode("utf-16-le" if sys.byteorder == "little" else "utf-16-be")
    # Letters and digits (``\w``) are neither; every space separator is whitespace (``\s``).
    spaces = [" \t\n\r", *(char for char in re.findall(r"\s", plane) if unicodedata.category(char) == "Zs")]
    punctuation = [re.escape(char) for char in re.findall(r"[^\w\s]", plane) if unicodedata.category(char)[0] == "P"]
    marks = "".join(punctuation)
    # An ASCII ")" right after such a mark is a run of its own too: the chunker ends a CJK sentence
    # after "。)" as after "。）" (harvester.chunking.chunker._SENTENCE_SEP).
    return re.compile(f"(\\)(?<=[{marks}]\\))|[^{''.join(spaces)}{marks}]+|[{marks}])")


# BERT's words in a run of printable ASCII: letters and digits, or one punctuation mark.
_ASCII_WORDS = re.compile(r"[A-Za-z0-9]+|[!-/:-@\[-`{-~]")
# Runs (and words) remembered per generation: a crawl's distinct runs grow with its pages, the
# ones it keeps meeting do not (``_known_runs``).
_WORD_CACHE_SIZE = 50_000
_RUNS_PER_BATCH = 1024  # runs encoded by one tokenizer call: a few encodings alive at once
# Characters of a page cut into words at once, so that a very long page never holds all its word
# strings together.
_SEGMENT_CHARS = 16_384
_WHITESPACE = re.compile(r"[ \t\n\r]")


def _segments(text: str) -> Iterator[tuple[int, str]]:
    """``text`` in pieces of about ``_SEGMENT_CHARS``, each cut right after whitespace (a line end
    if there is one), with its offset. No word or run crosses whitespace, and a run's start needs
    whitespace or the text's start before it, so the pieces' words are the text's."""
    start, size = 0, len(text)
    while size - start > _SEGMENT_CHARS:
        window_end = start + _SEGMENT_CHARS
        cut = text.rfind("\n", start, window_end)
        if cut < 0:
            cut = max(text.rfind(" ", start, window_end), text.rfind("\t", start, window_end),
                      text.rfind("\r", start, window_end))
        if cut < 0:  # no whitespace in the window: up to the next
            found = _WHITESPACE.search(text, window_end)
            if found is None:
                break
            cut = found.start()
        yield start, text[start:cut + 1]
        start = cut + 1
    if start < size or not text:
        yield start, text[start:]


@dataclass(frozen=True)
class ModelTokenizer:
    """A model's own tokenizer and word-piece limit, read from its folder without loading the
    model: what chunking needs. Importing torch and loading the weights takes seconds and hundreds
    of MiB, which a crawl with embedding off, or one still waiting for its model, need not pay."""

    tokenizer: Any  # a ``tokenizers.Tokenizer``: the same tokenizer.json the model's fast tokenizer wraps
    max_tokens: int
    # Its tokens never cross whitespace or punctuation (BERT's pre-tokenizer splits at both, and
    # WordPiece works within those words): a text's count is the sum of its parts' counts when it
    # is cut there, so one encoding of a page counts any stretch of it (``token_index``).
    additive: bool = False
    # Text may be cut into runs (``_run_pattern``) and each distinct run's count looked up once
    # per crawl (``token_index``): the tokenizer builds a whole encoding (ids, tokens, masks,
    # offsets) per call, costly on a long docs page, where counts per run are enough.
    # Set for a BERT normalizer (or none), BERT pre-tokenizer and WordPiece model: the same tokens.
    word_cache: bool = False
    lowercase: bool = False
    added_tokens: tuple[str, ...] = ()
    _runs: dict[str, int] = field(default_factory=dict, init=False, compare=False, repr=False)
    _words: dict[str, int] = field(default_factory=dict, init=False, compare=False, repr=False)
    _old_runs: dict[str, int] = field(default_factory=dict, init=False, compare=False, repr=False)
    _old_words: dict[str, int] = field(default_factory=dict, init=False, compare=False, repr=False)

    def count(self, texts: Sequence[str]) -> list[int]:
        """Word pieces of each text, without the special tokens the model adds."""
        if self.word_cache and not self._holds_added_token(texts):
            return [self._run_total(text) for text in texts]
        return [len(encoding.ids) for encoding in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def token_index(self, text: str) -> tuple[Sequence[int], Sequence[int]]:
        """Where ``text``'s word pieces are (``harvester.chunking.chunker.TokenIndex``): run starts
        and the pieces before each; exact for any stretch cut at whitespace or next to a non-ASCII
        punctuation mark. Only for an ``additive`` tokenizer."""
        if not self.word_cache or self._holds_added_token((text,)):
            starts = self.token_starts(text)
            return starts, range(len(starts) + 1)
        anchors: array[int] = array("l")
        totals: array[int] = array("l", [0])
        for offset, segment in _segments(text):
            # re.split and the positions summed from the parts' lengths: a match object per run
            # (finditer) would cost more than the rest together.
            parts = _run_pattern().split(segment)  # gap, run, gap, run, ..., gap
            found = parts[1::2]
            counts = self._known_runs(found)
            anchors.extend(map(offset.__add__, list(accumulate(map(len, parts)))[:-1:2]))
            sums = accumulate(map(counts.__getitem__, found), initial=totals[-1])
            next(sums)
            totals.extend(sums)
        return anchors, totals

    def _run_total(self, text: str) -> int:
        total = 0
        for _, segment in _segments(text):
            runs = _run_pattern().findall(segment)
            total += sum(map(self._known_runs(runs).__getitem__, runs))
        return total

    def _holds_added_token(self, texts: Sequence[str]) -> bool:
        # The tokenizer matches its added tokens ([CLS], [MASK]...) in the raw text, before words.
        return any(token in text for text in texts for token in self.added_tokens)

    def _known_runs(self, runs: Sequence[str]) -> dict[str, int]:
        """The run cache, holding ``runs``. A run of printable ASCII is counted from its words
        (BERT's, each counted once per crawl by the WordPiece model alone: its normalizer keeps
        them as they are but for case); any other goes through the whole tokenizer."""
        known = self._runs
        if len(known) > _WORD_CACHE_SIZE:
            # Two generations: the full dicts become the older one (what is still met moves back),
            # new dicts rather than clear(): another thread may be reading these.
            object.__setattr__(self, "_old_runs", known)
            object.__setattr__(self, "_old_words", self._words)
            known = {}
            object.__setattr__(self, "_runs", known)
            object.__setattr__(self, "_words", {})
        unknown = set(runs).difference(known)
        if not unknown:
            return known
        words, old_runs, old_words, model, other = self._words, self._old_runs, self._old_words, self.tokenizer.model, []
        for run in unknown:
            total = old_runs.get(run)
            if total is not None:
                known[run] = total
            elif run.isascii() and run.isprintable():
                total = 0
                for word in _ASCII_WORDS.findall(run):
                    size = words.get(word)
                    if size is None:
                        size = old_words.get(word)
                        if size is None:
                            size = len(model.tokenize(word.lower() if self.lowercase else word))
                        words[word] = size
                    total += size
                known[run] = total
            else:
                other.append(run)
        for first in range(0, len(other), _RUNS_PER_BATCH):
            batch = other[first:first + _RUNS_PER_BATCH]
            for run, encoding in zip(batch, self.tokenizer.encode_batch(batch, add_special_tokens=False)):
                known[run] = len(encoding.ids)
        return known

    def token_starts(self, text: str) -> Sequence[int]:
        """Where each word piece of ``text`` starts (in characters), in order, through the
        tokenizer. The text is encoded in pieces cut at line ends (the tokenizer is much slower on
        one long input than on the same text in pieces of a few thousand characters), which does
        not change its tokens; a few pieces at a time, keeping only the offsets (an encoding holds
        ids, tokens, masks and offsets: tens of MB for a long page)."""
        starts = array("l")
        pieces: list[str] = []
        at: list[int] = []
        start = 0
        while start < len(text):
            end = text.find("\n", start + _PIECE_CHARS)
            end = len(text) if end < 0 else end
            pieces.append(text[start:end])
            at.append(start)
            start = end + 1
            if len(pieces) == _PIECES_PER_BATCH or start >= len(text):
                for offset, encoding in zip(at, self.tokenizer.encode_batch(pieces, add_special_tokens=False)):
                    starts.extend(offset + first for first, _ in encoding.offsets)
                pieces, at = [], []
        return starts


@functools.lru_cache(maxsize=4)
def load_model_tokenizer(name: str) -> ModelTokenizer | None:
    """The tokenizer of a local sentence-transformers folder, read from its ``tokenizer.json``,
    with the limit its ``sentence_bert_config.json`` states; None when the folder is not like that
    (the caller then loads the whole model for its tokenizer).

    transformers rebuilds a BERT normalizer from tokenizer_config.json when the two disagree, and
    sentence-transformers may lower-case texts itself: in either case the file alone would count
    differently, so None.
    """
    import json

    location = Path(resolve_model(name))
    try:
        config = json.loads((location / "sentence_bert_config.json").read_text(encoding="utf-8"))
        tokenizer_config = json.loads((location / "tokenizer_config.json").read_text(encoding="utf-8"))
        limit = int(config["max_seq_length"])
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(location / "tokenizer.json"))
    except Exception:
        return None
    if config.get("do_lower_case"):
        return None
    # The components' own attributes, not the whole tokenizer written out as JSON and read back
    # (vocabulary included, a cost on every crawl's first page).
    normalizer = tokenizer.normalizer
    bert_normalizer = _component_type(normalizer) == "BertNormalizer"
    if bert_normalizer:
        expected = {
            "lowercase": tokenizer_config.get("do_lower_case", True),
            "strip_accents": tokenizer_config.get("strip_accents"),
            "handle_chinese_chars": tokenizer_config.get("tokenize_chinese_chars", True),
        }
        if any(getattr(normalizer, key) != value for key, value in expected.items()):
            return None
    tokenizer.no_truncation()
    tokenizer.no_padding()
    special = len(tokenizer.encode("", add_special_tokens=True).ids)
    additive = (_component_type(tokenizer.pre_tokenizer) == "BertPreTokenizer"
                and _component_type(tokenizer.model) == "WordPiece"
                and (normalizer is None or bert_normalizer))
    added = tuple(token.content for token in tokenizer.get_added_tokens_decoder().values())
    return ModelTokenizer(tokenizer=tokenizer, max_tokens=limit - special, additive=additive,
                          word_cache=additive, lowercase=bert_normalizer and bool(normalizer.lowercase),
                          added_tokens=added)


def _component_type(component: Any) -> str | None:
    """The ``type`` tokenizer.json gives a tokenizer's normalizer, pre-tokenizer or model: the
    name of its class in ``tokenizers``."""
    return None if component is None else type(component).__name__
