"""BM25 sparse vectors for Qdrant's lexical search, computed locally, with FastEmbed's term ids.

Qdrant applies the IDF part itself (``Modifier.IDF`` on the sparse vector), over the collection as it
is; we send each chunk's term-frequency part and each query's terms (value 1).

Two kinds of terms go into every vector:

- **stems**, exactly as FastEmbed's ``Qdrant/bm25`` makes them (``fastembed.sparse.bm25.Bm25``,
  English): lower-cased text cut at every non-word character, the NLTK English stop words dropped,
  tokens over 40 characters dropped, the rest stemmed by the Snowball English stemmer
  (``py_rust_stemmers``), each stem's id ``abs(mmh3.hash(stem))``, its value BM25's saturated term
  frequency with k=1.2, b=0.75, an average length of 256 stems. A query FastEmbed encodes
  (LangChain's ``FastEmbedSparse``, LlamaIndex's hybrid mode) therefore matches these terms, with
  the same values FastEmbed would have stored;
- **words as written**, every token including stop words, under ids of their own
  (``abs(mmh3.hash("=" + word))``), with the same saturation. Stemming helps questions in users'
  words ("configuring" finds "configuration"); the exact words keep short, exact queries sharp
  ("Log In", "Install", API names), which stems alone blur. A FastEmbed query does not use them.

``sparse_query`` is the query-side encoder, public so that other programs (an MCP server, a
framework adapter) query the collection exactly as ``scrapy search`` does.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

import mmh3
from py_rust_stemmers import SnowballStemmer

K1 = 1.2
B = 0.75
AVERAGE_LENGTH = 256.0  # FastEmbed's default avg_len, so the stem values are FastEmbed's own
MAX_TOKEN = 40
EXACT_PREFIX = "="

# NLTK's English stop words, the list FastEmbed's Qdrant/bm25 ships as english.txt.
STOP_WORDS = frozenset(["a", "about", "above", "after", "again", "against", "ain", "all", "am", "an", "and", "any", "are", "aren", "aren't", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "couldn", "couldn't", "d", "did", "didn", "didn't", "do", "does", "doesn", "doesn't", "doing", "don", "don't", "down", "during", "each", "few", "for", "from", "further", "had", "hadn", "hadn't", "has", "hasn", "hasn't", "have", "haven", "haven't", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "isn", "isn't", "it", "it's", "its", "itself", "just", "ll", "m", "ma", "me", "mightn", "mightn't", "more", "most", "mustn", "mustn't", "my", "myself", "needn", "needn't", "no", "nor", "not", "now", "o", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "re", "s", "same", "shan", "shan't", "she", "she's", "should", "should've", "shouldn", "shouldn't", "so", "some", "such", "t", "than", "that", "that'll", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "ve", "very", "was", "wasn", "wasn't", "we", "were", "weren", "weren't", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "won", "won't", "wouldn", "wouldn't", "y", "you", "you'd", "you'll", "you're", "you've", "your", "yours", "yourself", "yourselves"])

_NON_WORD = re.compile(r"[^\w]")
_STEMMER = SnowballStemmer("english")


def tokens(text: str) -> list[str]:
    """FastEmbed's tokens of ``text``: lower-cased, cut at every non-word character. A token that is
    only ``_`` (a punctuation character to FastEmbed) is dropped, as are tokens over 40 characters."""
    return [t for t in _NON_WORD.sub(" ", text.lower()).split() if t != "_" and len(t) <= MAX_TOKEN]


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    stemmed: str = _STEMMER.stem_word(token)
    return stemmed


def stems(text: str) -> list[str]:
    """The terms FastEmbed's ``Qdrant/bm25`` (English) makes of ``text``, in order."""
    return [s for s in (stem(t) for t in tokens(text) if t not in STOP_WORDS) if s]


def term_id(term: str) -> int:
    """FastEmbed's id of a term (``Bm25.compute_token_id``)."""
    return abs(mmh3.hash(term))


def exact_id(token: str) -> int:
    """The id of a word as written (Harvester's own terms; FastEmbed never makes them)."""
    return abs(mmh3.hash(EXACT_PREFIX + token))


def document_vector(text: str) -> tuple[list[int], list[float]]:
    """Sparse (indices, values) of a stored text: stems and words, BM25-saturated, length-normalised
    by the number of stems (as FastEmbed does)."""
    words = tokens(text)
    stemmed = [s for s in (stem(t) for t in words if t not in STOP_WORDS) if s]
    norm = K1 * (1 - B + B * len(stemmed) / AVERAGE_LENGTH)
    pairs = [(term_id(t), tf) for t, tf in Counter(stemmed).items()]
    pairs += [(exact_id(t), tf) for t, tf in Counter(words).items()]
    return _merge((index, tf * (K1 + 1) / (tf + norm)) for index, tf in pairs)


def sparse_query(text: str) -> tuple[list[int], list[float]]:
    """Sparse (indices, values) of a query: each distinct stem and word once, value 1."""
    words = tokens(text)
    ids = {term_id(s) for s in (stem(t) for t in words if t not in STOP_WORDS) if s}
    ids |= {exact_id(t) for t in words}
    return _merge((index, 1.0) for index in ids)


def fastembed_query(text: str) -> tuple[list[int], list[float]]:
    """What FastEmbed's ``Bm25.query_embed`` sends for ``text`` (stems only, value 1): the terms a
    framework querying through FastEmbed matches."""
    return _merge((term_id(s), 1.0) for s in set(stems(text)))


def _merge(pairs: Iterable[tuple[int, float]]) -> tuple[list[int], list[float]]:
    merged: dict[int, float] = {}
    for index, value in pairs:
        merged[index] = merged.get(index, 0.0) + value
    indices = sorted(merged)
    return indices, [merged[i] for i in indices]
