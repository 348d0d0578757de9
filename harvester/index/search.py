"""Searching the collection: dense (the model), sparse (BM25) or both fused; results grouped by page
or not. Scrapy-free.

How a query is answered, and why (the settings compared are in bench/results/retrieval.json):

1. **Candidates**: the ``depth`` best chunks by cosine similarity and the ``depth`` best by BM25,
   in one batch request to the store (``candidates``), narrowed by an optional scope (site, URL
   prefix, section). That is the only part that talks to the store.
2. **Pages, on each side** (``page_ranking``): a question is about a page, and the chunks of a page
   compete with one another otherwise. Each side groups its own candidates by page; a page scores
   its best chunk plus ``page_weight`` times its next ``page_chunks`` best: a second good chunk is
   evidence, while long pages cannot win by sheer number of mediocre chunks.
3. **Fusion** (``fuse_pages``), by default ``score``: the two page rankings are fused: a page
   scores its dense page score plus ``sparse_weight`` (0.4) times its BM25 page score divided by
   the query's best BM25 page score. Cosine is comparable from one query to the next, so it is used
   as it is; BM25 is not (it grows with the query's length and rare words), so it is scaled to the
   query's best. This keeps the best evidence each side found for a page even when the two sides
   found it in different chunks (its meaning in one section, its words in another). To it is added
   twice (``chunk_weight``) the page's score when chunks are fused first (``fuse``: a chunk's
   cosine plus its weighted BM25 share, then ``group_pages``): one passage that both sides find is
   stronger evidence than two that each side finds apart (without the length prior, weights 1.5 to
   2 ranked every question set as well as 1 or better and from 2.5 Django's questions lost; with
   it, 1 and 1.5 put a Scrapy answer past the fifth place and from 2.5 Django's lose again). A page
   of N chunks then loses ``length_prior`` (0.3) times sqrt(ln N): the best of N chunks'
   similarities grows with N by chance alone (the expected maximum of N draws is about sqrt(2 ln N)
   standard deviations up), so without it long reference pages and release notes, whose best chunk
   matches moderately, climb over the short page whose one chunk answers. Not when the query names
   a code identifier (``names_code``: a dotted, snake_case or called name): its answer is that
   name's entry, often on a long reference page, matched by its exact words rather than by chance.
   A page that both sides rank first is ranked first, whatever the sum says: fusing chunks alone
   (``level="chunk"``, the previous default) let long pages whose chunks sit moderately in both
   lists climb over it; fusing pages alone (``level="page"``) lost the one-chunk agreement and
   ranked worse on natural questions. When both halves are fused, each half's scores (of chunks and
   of pages) are measured from ``baseline`` (0.4) times its weakest candidate's score, where a page
   absent from that half's candidates stands: a page one half does not return scored below that
   half's weakest candidate, not nothing, and a candidate near a half's last place is barely better
   evidence than one it did not return. From zero (baseline 0), a page that one half ranks high and
   the other does not return fell below pages that both halves find weakly; from the weakest
   candidate itself (1), Flask's and Scrapy's recall@5 fell; at 0.4 and 0.5 no question set's
   recall@5 fell, nor any MRR by more than 0.003. Last, no page climbs more than one place over the
   better of its two half ranks: each place goes to the best fused page that a half ranks at that
   place or the next, while one is left (``supported``); otherwise a long page that both sides rank
   third or worse, with many moderate chunks, can sum past the page one side ranks first. Min-max
   normalisation stretches the dense side's small differences into large ones; rank fusion (RRF)
   throws away how sure each side is: both ranked worse. One result per page, its best chunk by the
   chunk-level fusion.
4. **Change notes yield** (``change_notes``, every mode): a changelog or a page of release
   notes matches a feature's words and meaning wherever the feature changed, so unless the query
   asks what changed (a version number, words of change), each run of such pages moves below the
   page that follows it. They are recognised by their headings, not their URLs: a version number
   in a heading under the page's top one (a heading per version), or in the top heading of two or
   more candidate pages (a page per version). **Lists of links yield** the same way
   (``link_lists``): a table of contents, an index of names or a category page matches a
   feature's name wherever it is listed, so a page whose best chunk is list items holding only
   links moves below the next page, unless every word of the query is in that chunk's headings
   (the query names the list: "API Reference").

``group_by=None`` returns chunks instead, in the chunk-level fused order (cosine plus the weighted
BM25 share of each chunk), identical texts collapsed.

Versions: a scope's ``version`` keeps the pages whose ``versions`` hold it. Without one, each
source (site) that stores several docs versions answers from its newest stable one
(``harvester.versions.detect.newest_stable``); each result says its ``version``.

Dates: a scope's ``since``/``until`` keep the pages whose date (``published``, else ``modified``)
falls in the range, in the store's filter, so the ``k`` results are the best of those pages.
``sort="date"`` then orders those ``k`` newest first (undated last), rather than by relevance.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from harvester.fetch.encoding import composed_text
from harvester.index.engines import as_store
from harvester.index.lexical import sparse_query, stems
from harvester.index.store import (
    DOC_ID,
    NODE_CONTENT,
    NODE_TYPE,
    PAGE_ONLY_KEYS,
    Candidate,
    Query,
    Scope,
    Store,
)
from harvester.versions.detect import newest_stable, version_key

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

    from harvester.embedding.models import Embedder

MODES = ("hybrid", "dense", "sparse")
# Payload keys a search result never reads (the page's whole Markdown and links, LlamaIndex's copy of
# the node): left in the store, so candidates carry only what results show.
UNUSED_KEYS = (*PAGE_ONLY_KEYS, NODE_CONTENT, NODE_TYPE, DOC_ID)
# What ranking reads of every candidate (its page, the page's length, its source's versions); a
# result's other keys are read for the candidates that can be results (``shown``).
RANK_KEYS = ("metadata.source_url", "metadata.total_chunks", "metadata.domain", "metadata.versions")
# A key every whole chunk payload has and ``RANK_KEYS`` lacks: the chunk's text.
TEXT_KEY = "page_content"
FUSIONS = ("score", "minmax", "rrf")
LEVELS = ("both", "page", "chunk")
GROUPS = ("page", None)
SORTS = ("relevance", "date")


@dataclass(frozen=True)
class SearchTuning:
    """The knobs of the ranking (module docstring). ``fusion``: ``score`` (cosine + weighted
    BM25/best BM25), ``minmax`` (each side min-max normalised over its candidates, weighted sum)
    or ``rrf`` (weighted reciprocal rank fusion, constant ``rrf_k``). ``level``: what is fused when
    results are pages: ``both`` (each side's page ranking, plus the chunk-level page score),
    ``page`` (the page rankings only) or ``chunk`` (chunks, then grouped); with ``both``, the
    chunk-level page score counts ``chunk_weight`` times. ``length_prior``: what a page of N chunks
    loses, times sqrt(ln N), in a hybrid search for a query naming no code identifier
    (``fuse_pages``). ``change_notes_yield``:
    release notes and changelogs yield to the next page when the query does not ask what changed
    (``change_notes``); ``link_lists_yield``: so do pages whose best chunk is a list of links, unless
    the query names the list (``link_lists``). ``baseline``: with ``score`` fusion of both halves,
    each half's scores are measured from this share of its weakest candidate's (``fuse``)."""

    depth: int = 20
    sparse_weight: float = 0.4
    page_weight: float = 0.25
    page_chunks: int = 1
    fusion: str = "score"
    dense_weight: float = 1.0
    rrf_k: int = 10
    level: str = "both"
    chunk_weight: float = 2.0
    length_prior: float = 0.3
    change_notes_yield: bool = True
    link_lists_yield: bool = True
    baseline: float = 0.4


DEFAULT_TUNING = SearchTuning()


def search(
    client: Store | QdrantClient, collection: str, embedder: Embedder, query: str, k: int,
    mode: str = "hybrid", tuning: SearchTuning = DEFAULT_TUNING, *, group_by: str | None = "page",
    scope: Scope | None = None, sort: str = "relevance",
) -> list[dict[str, Any]]:
    """The top ``k`` results for ``query``, best first: pages (``group_by="page"``, each with its
    best chunk) or chunks (``group_by=None``, identical texts collapsed into the first); with
    ``sort="date"``, the same results newest first.

    ``client`` is a store (``harvester.index.engines.open_store``) or a ``QdrantClient``;
    ``scope`` narrows the search (site, URL prefix, section, date range)."""
    if mode not in MODES:
        raise ValueError(f"unknown search mode {mode!r}: one of {MODES}")
    if sort not in SORTS:
        raise ValueError(f"unknown sort {sort!r}: one of {SORTS}")
    if group_by not in GROUPS:
        raise ValueError(f"unknown grouping {group_by!r}: 'page' or None")
    if tuning.fusion not in FUSIONS:
        raise ValueError(f"unknown fusion {tuning.fusion!r}: one of {FUSIONS}")
    if tuning.level not in LEVELS:
        raise ValueError(f"unknown fusion level {tuning.level!r}: one of {LEVELS}")
    query = composed_text(query)  # as the stored text is: words typed with combining marks match it
    dense = embedder.encode([query], batch_size=1)[0].tolist() if mode != "sparse" else None
    sparse = sparse_query(query) if mode != "dense" else None
    # Only the first ``depth`` of each side are fused; the rest fill up to k results after
    # grouping or collapsing, ranked after them. A few pages can hold all the candidates (a long
    # page on the query's topic): then fetch deeper, once.
    limit = tuning.depth + 5 * k
    store = as_store(client)
    defaults: dict[str, str] = {}
    choose = scope is None or scope.version is None
    for _attempt in range(2):
        dense_side, sparse_side = candidates(store, collection, embedder.vector_name, dense, sparse, limit, scope)
        full = max(len(dense_side), len(sparse_side)) >= limit
        if choose and not defaults and several_versions(dense_side + sparse_side):
            defaults = default_versions(store, collection, scope)
        if defaults:
            dense_side, sparse_side = in_versions(dense_side, defaults), in_versions(sparse_side, defaults)
        dense_side, sparse_side = complete(store, collection, dense_side, sparse_side, k, tuning, group_by)
        results = rank(dense_side, sparse_side, k, tuning, group_by=group_by, query=query)
        if len(results) >= k or not full:
            break
        # The other versions' copies of the best pages fill the candidates: look deeper.
        limit *= 20 if defaults else 4
    wanted = scope.version if scope is not None else None
    for result in results:
        listed = result.pop("versions", None) or []
        chosen = wanted or defaults.get(result.pop("domain", None) or "")
        result["version"] = chosen if chosen in listed else result.get("version")
    return by_date(results) if sort == "date" else results


def source_versions(store: Store, collection: str, scope: Scope | None = None) -> dict[str, list[str]]:
    """Each source's (domain's) docs versions in the collection, oldest first; sources without
    versions are left out."""
    found: dict[str, set[str]] = {}
    narrowed = Scope(domain=scope.domain, url_prefix=scope.url_prefix) if scope is not None else None
    for record in store.scroll(collection, narrowed, keys=["metadata.domain", "metadata.versions"]):
        metadata = record.payload.get("metadata") or {}
        versions = metadata.get("versions") or ()
        if versions:
            found.setdefault(metadata.get("domain") or "", set()).update(versions)
    return {domain: sorted(versions, key=version_key) for domain, versions in found.items()}


def several_versions(side: list[Candidate]) -> bool:
    """Whether the candidates hold two versions of one source (then a version must be chosen)."""
    seen: dict[str, set[str]] = {}
    for candidate in side:
        metadata = candidate.payload.get("metadata") or {}
        versions = seen.setdefault(metadata.get("domain") or "", set())
        versions.update(metadata.get("versions") or ())
        if len(versions) > 1:
            return True
    return False


# The versions each source has, per store and collection, while the collection's point count holds:
# reading them scrolls the whole collection.
_DEFAULTS: dict[tuple[int, str, Scope | None], tuple[int, dict[str, str]]] = {}


def default_versions(store: Store, collection: str, scope: Scope | None = None) -> dict[str, str]:
    """The version each source answers from when none is asked for: its newest stable one, for the
    sources that store more than one version."""
    narrowed = Scope(domain=scope.domain, url_prefix=scope.url_prefix) if scope is not None else None
    key, count = (id(store), collection, narrowed), store.count(collection)
    cached = _DEFAULTS.get(key)
    if cached is not None and cached[0] == count:
        return cached[1]
    chosen = {}
    for domain, versions in source_versions(store, collection, narrowed).items():
        newest = newest_stable(versions) if len(versions) > 1 else None
        if newest is not None:
            chosen[domain] = newest
    _DEFAULTS[key] = (count, chosen)
    return chosen


def in_versions(side: list[Candidate], defaults: dict[str, str]) -> list[Candidate]:
    """The candidates of the versions ``defaults`` names for their sources (and every candidate of
    a source it does not name, or without a version)."""
    kept = []
    for candidate in side:
        metadata = candidate.payload.get("metadata") or {}
        wanted = defaults.get(metadata.get("domain") or "")
        if wanted is None or not metadata.get("versions") or wanted in metadata["versions"]:
            kept.append(candidate)
    return kept


def by_date(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``results`` newest first by their date (``published``, else ``modified``); undated ones last,
    in their order."""
    dated = [r for r in results if result_date(r)]
    dated.sort(key=lambda r: _instant(result_date(r) or ""), reverse=True)
    return dated + [r for r in results if not result_date(r)]


def result_date(result: dict[str, Any]) -> str | None:
    """The date a result is filtered and sorted by: its page's ``published``, else ``modified``."""
    return result.get("published") or result.get("modified")


def _instant(iso: str) -> datetime:
    try:
        when = datetime.fromisoformat(iso)
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return when if when.tzinfo else when.replace(tzinfo=UTC)  # the store reads zone-less dates as UTC


def date_bound(text: str, *, end: bool = False) -> str:
    """A ``--since`` (``end=False``) or ``--until`` (``end=True``) date or date and time as the store's
    ISO 8601 bound: a bare date covers its whole day (UTC), a zone is turned into UTC. Raises
    ValueError for anything else."""
    text = text.strip()
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not a date: {text!r} (use YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][+HH:MM])") from None
    if len(text) <= 10 and "T" not in text:
        when = when.replace(hour=23, minute=59, second=59, microsecond=999999) if end else when
        when = when.replace(tzinfo=UTC)
    elif when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def candidates(
    store: Store, collection: str, using: str, dense: Sequence[float] | None,
    sparse: tuple[list[int], list[float]] | None, limit: int, scope: Scope | None = None,
) -> tuple[list[Candidate], list[Candidate]]:
    """The best ``limit`` chunks by the dense vector and by the sparse one (an empty list for a side
    not asked), in one request. A store that remembers ``RANK_KEYS`` (``Store.remember``) gives
    only those; ``complete`` reads the rest of the chunks that can be results."""
    queries, sides = [], []
    if dense is not None:
        queries.append(Query(limit, using=using, dense=list(dense), scope=scope, exclude_keys=UNUSED_KEYS,
                             keys=RANK_KEYS))
        sides.append("dense")
    if sparse is not None and sparse[0]:  # a query of punctuation only has no terms
        queries.append(Query(limit, sparse=sparse, scope=scope, exclude_keys=UNUSED_KEYS, keys=RANK_KEYS))
        sides.append("sparse")
    found: dict[str, list[Candidate]] = {"dense": [], "sparse": []}
    if queries:
        found.update(zip(sides, store.query(collection, queries), strict=True))
    return found["dense"], found["sparse"]


def complete(
    store: Store, collection: str, dense: list[Candidate], sparse: list[Candidate], k: int,
    tuning: SearchTuning = DEFAULT_TUNING, group_by: str | None = "page",
) -> tuple[list[Candidate], list[Candidate]]:
    """The candidates with whole payloads (less ``UNUSED_KEYS``) where ``rank`` can show them
    (``shown``) and the store gave only ``RANK_KEYS``, read in one request."""
    if all(TEXT_KEY in c.payload for c in dense + sparse):
        return dense, sparse
    wanted = [key for key, candidate in shown(dense, sparse, k, tuning, group_by).items()
              if TEXT_KEY not in candidate.payload]
    if not wanted:
        return dense, sparse
    read = store.retrieve(collection, wanted, UNUSED_KEYS)

    def whole(side: list[Candidate]) -> list[Candidate]:
        return [Candidate(c.id, c.score, read[c.id]) if c.id in read else c for c in side]
    return whole(dense), whole(sparse)


def shown(
    dense: list[Candidate], sparse: list[Candidate], k: int, tuning: SearchTuning = DEFAULT_TUNING,
    group_by: str | None = "page",
) -> dict[Any, Candidate]:
    """By id, the candidates whose payloads ``rank``'s results can show, whatever the query: grouped
    by page, each page's best chunk among the first ``depth`` of each half (any of those pages can
    be a result) and, when they are fewer than ``max(k, depth)`` pages, the best chunk of each
    page that can fill up (as ``rank`` does); ungrouped, every candidate."""
    if group_by != "page":
        return {c.id: c for c in dense + sparse}
    head = fuse(dense[:tuning.depth], sparse[:tuning.depth], tuning)
    best: dict[str, Candidate] = {}
    for candidate, _ in head:
        best.setdefault(_page_key(candidate), candidate)
    wanted = max(k, tuning.depth)
    if len(best) < wanted:
        seen = {c.id for c, _ in head}
        tail = [pair for pair in fuse(dense, sparse, tuning) if pair[0].id not in seen]
        for url, _, chunks in _pages(tail, tuning)[:wanted]:
            best.setdefault(url, chunks[0][0])
    return {c.id: c for c in best.values()}


def rank(
    dense: list[Candidate], sparse: list[Candidate], k: int, tuning: SearchTuning = DEFAULT_TUNING,
    *, group_by: str | None = "page", query: str | None = None,
) -> list[dict[str, Any]]:
    """Results from the two candidate lists (either may be empty): fused, then grouped by page or
    collapsed; pages of change notes yield to the next page unless ``query`` asks what changed
    (``change_notes``), and so do lists of links unless it names them (``link_lists``). Pure: no
    Qdrant, no model."""
    head = fuse(dense[:tuning.depth], sparse[:tuning.depth], tuning)
    seen = {c.id for c, _ in head}
    # Candidates past the depth only fill up, after every fused one.
    tail = [pair for pair in fuse(dense, sparse, tuning) if pair[0].id not in seen]
    if group_by != "page":
        return collapse([hit(c.payload, score) for c, score in head + tail], k)
    notes_yield = tuning.change_notes_yield and not (query and asks_about_changes(query))
    yielding = notes_yield or tuning.link_lists_yield
    # Yielding looks past the k-th page, so that the first k are the same whatever k is.
    wanted = max(k, tuning.depth) if yielding else k
    if tuning.level == "chunk":
        results = group_pages(head, wanted, tuning)
    else:
        if query and names_code(query):
            tuning = replace(tuning, length_prior=0.0)
        results = fuse_pages(dense[:tuning.depth], sparse[:tuning.depth], head, wanted, tuning)
    if len(results) < wanted:
        have = {result["url"] for result in results}
        results += [r for r in group_pages(tail, wanted, tuning) if r["url"] not in have][:wanted - len(results)]
    if not yielding:
        return results[:k]
    yielders = change_notes(results) if notes_yield else set()
    if tuning.link_lists_yield:
        yielders |= link_lists(results, query)
    return yield_pages(results, yielders)[:k]


# A version number standing alone ("2.0", "v1.4.2", "3.2.1 (2021-05-04)"), not part of a longer
# dotted name or number, nor an amount ("3.2%", "$4.5").
VERSION_NUMBER = re.compile(r"(?<![\w./$€£¥])v?\d+\.\d+(?:\.\d+)?(?![\w.]*\w)(?!\s*%)")
# A section number before a heading's words ("3.1.2. Strings", "1.2 Installing"): not a version.
SECTION_NUMBER = re.compile(r"^\s*\d+(?:\.\d+)*\.?\s+(?=[^\W\d])")
# The words of a question about changes (beside a version number). Not "change", "new" or "remove"
# alone: "change the port", "new URLs", "remove a header" and Django's "admin change list" ask how.
CHANGE_WORDS = re.compile(
    r"\b(?:deprecat\w*|releas\w*|upgrad\w*|changelog|versions?|breaking changes?|what[\u2019']?s new"
    r"|new(?=\s*(?:in\b|\?|$))|(?:added|changed|removed|dropped) in)\b", re.IGNORECASE)


def asks_about_changes(query: str) -> bool:
    """Whether ``query`` asks what changed: a version number, or deprecated, release, upgrade,
    changelog, version, breaking change, what's new, new (in), added / changed / removed / dropped
    in."""
    return VERSION_NUMBER.search(query) is not None or CHANGE_WORDS.search(query) is not None


def change_notes(results: list[dict[str, Any]]) -> set[str]:
    """The pages among ``results`` that read as change notes, by their best chunk's headings: a
    version number in a heading under the page's top one (a changelog: a heading per version), or
    in the top heading of two or more of the pages (release notes: a page per version). One page
    whose title names a version (a docs home, "Scrapy 2.8 documentation") is neither, nor is a
    section number ("3.1.2. Strings")."""
    found, versioned = set(), []
    for result in results:
        headings = [SECTION_NUMBER.sub("", str(h)) for h in result.get("heading_path") or []]
        if any(VERSION_NUMBER.search(h) for h in headings[1:]):
            found.add(result["url"])
        elif headings and VERSION_NUMBER.search(headings[0]):
            versioned.append(result["url"])
    return found | set(versioned) if len(versioned) > 1 else found


# A list item that is one link and nothing else ("- [Sessions](...)", "1. [`get()`](...)").
LINK_ITEM = re.compile(r"\s*(?:[-*+]|\d+[.)])\s+`?\[[^\]]*\]\([^)]*\)`?[\s.,;:]*")


def link_list(text: str) -> bool:
    """Whether a chunk's Markdown is a list of links: at least three lines besides its headings, four
    in five of them list items that hold only a link (a table of contents, an index of names, a
    category page of articles)."""
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return len(lines) >= 3 and sum(1 for line in lines if LINK_ITEM.fullmatch(line)) >= 0.8 * len(lines)


def link_lists(results: list[dict[str, Any]], query: str | None = None) -> set[str]:
    """The pages among ``results`` whose best chunk is a list of links (``link_list``), unless every
    word of ``query`` is in that chunk's headings: the query names the list ("API Reference")."""
    asked = set(stems(query)) if query else set()
    found = set()
    for result in results:
        if link_list(result.get("text") or ""):
            headings = set(stems(" ".join(str(h) for h in result.get("heading_path") or [])))
            if not asked or not asked <= headings:
                found.add(result["url"])
    return found


def yield_pages(results: list[dict[str, Any]], yielders: set[str]) -> list[dict[str, Any]]:
    """``results`` with each run of the pages ``yielders`` names moved below the page that follows
    it. Change notes (``change_notes``) match a feature's words and meaning wherever it changed, and
    lists of links (``link_lists``) its name wherever it is listed, but a question that does not ask
    what changed, nor name the list, is about the page that explains the feature."""
    ordered: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []
    for result in results:
        if result["url"] in yielders:
            run.append(result)
        else:
            ordered += [result, *run]
            run = []
    return ordered + run


def fuse_pages(
    dense: list[Candidate], sparse: list[Candidate], fused: list[tuple[Candidate, float]], k: int,
    tuning: SearchTuning = DEFAULT_TUNING,
) -> list[dict[str, Any]]:
    """Each half ranks pages from its own chunks (``page_ranking``), then the two page rankings are
    fused as ``fuse`` fuses chunks: a page keeps the best evidence each half found for it, even when
    the halves found it in different chunks. With ``level="both"`` a page also adds its score from
    the chunk-level fusion ``fused`` grouped by page (``group_pages``: one chunk that both halves
    found). When both halves are present, a page of N chunks loses ``tuning.length_prior`` times
    sqrt(ln N) (``length_penalty``; ``rank`` sets it to 0 for a query that names code); a page
    that both halves rank first is ranked first; then no page climbs more than one place over the
    better of its two half ranks (``supported``). A result's text is its page's best chunk in
    ``fused``."""
    dense_pages, sparse_pages = page_ranking(dense, tuning), page_ranking(sparse, tuning)
    scores = {str(page.id): score for page, score in fuse(dense_pages, sparse_pages, tuning)}
    best: dict[str, Candidate] = {}
    matches: dict[str, set[Any]] = {}
    for candidate, _ in fused:
        url = _page_key(candidate)
        best.setdefault(url, candidate)
        matches.setdefault(url, set()).add(candidate.id)
    if tuning.level == "both":
        for url, score, _ in _pages(fused, tuning):
            scores[url] += tuning.chunk_weight * score
    if tuning.length_prior and dense_pages and sparse_pages:
        for url in scores:
            scores[url] -= tuning.length_prior * length_penalty(best[url].payload)
    order = sorted(scores, key=lambda url: -scores[url])
    if dense_pages and sparse_pages and dense_pages[0].id == sparse_pages[0].id:
        order.remove(str(dense_pages[0].id))
        order.insert(0, str(dense_pages[0].id))
    if dense_pages and sparse_pages:
        order = supported(order, dense_pages, sparse_pages, k)
    results = []
    for url in order[:k]:
        result = hit(best[url].payload, scores[url])
        result["matches"] = len(matches[url])
        results.append(result)
    return results


def length_penalty(payload: dict[str, Any]) -> float:
    """sqrt(ln N), N the chunks of the page ``payload`` is a chunk of: the best of N chunks'
    similarities to a query grows with N by chance alone, about as sqrt(2 ln N) standard deviations
    (the expected maximum of N draws), so a long page's best chunk is weaker evidence than a short
    page's equal one."""
    total = (payload.get("metadata") or {}).get("total_chunks") or 1
    return math.sqrt(math.log(total)) if total > 1 else 0.0


# A code identifier in a query: a dotted name (``resp.ok``, ``settings.DEBUG``), a snake_case name
# (``status_code``) or a call (``url_for()``); "e.g." and version numbers are none.
CODE_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+|\b[A-Za-z]\w*_\w+|\w\(\)")


def names_code(query: str) -> bool:
    """Whether ``query`` names a code identifier (``CODE_IDENTIFIER``): its answer is that
    identifier's entry, often on a long reference page, found by its exact words, not by chance, so
    the length prior does not apply."""
    return CODE_IDENTIFIER.search(query) is not None


def supported(order: list[str], dense: list[Candidate], sparse: list[Candidate], k: int) -> list[str]:
    """The first ``k`` of the fused ``order`` with no page more than one place above the better of
    its two half ranks (``dense`` and ``sparse``: each half's page ranking): each place goes to the
    best fused page that a half ranks at that place or the next, while one is left, else to the best
    fused page."""
    best: dict[str, int] = {}
    for pages in (dense, sparse):
        for place, page in enumerate(pages, 1):
            best[str(page.id)] = min(best.get(str(page.id), place), place)
    left, placed = list(order), []
    while left and len(placed) < k:
        place = len(placed) + 1
        url = next((url for url in left if best.get(url, place + 2) <= place + 1), left[0])
        left.remove(url)
        placed.append(url)
    return placed


def page_ranking(side: list[Candidate], tuning: SearchTuning = DEFAULT_TUNING) -> list[Candidate]:
    """One half's chunks as pages, best first: a page scores its best chunk plus ``page_weight``
    times its next ``page_chunks`` best (as ``group_pages``); the page's id is its URL."""
    return [Candidate(url, score) for url, score, _ in _pages([(c, c.score) for c in side], tuning)]


def fuse(
    dense: list[Candidate], sparse: list[Candidate], tuning: SearchTuning = DEFAULT_TUNING,
) -> list[tuple[Candidate, float]]:
    """Each candidate chunk once, with its fused score, best first (ties: dense order first). When
    both halves have candidates, each half's scores are measured from ``tuning.baseline`` times its
    weakest candidate's (``score`` fusion): one half alone ranks as it does without the other."""
    sides = [(dense, tuning.dense_weight, "dense"), (sparse, tuning.sparse_weight, "sparse")]
    fused: dict[Any, float] = {}
    chunks: dict[Any, Candidate] = {}
    both = bool(dense) and bool(sparse)
    for side, weight, kind in sides:
        if not side:
            continue
        scores = _side_scores(side, kind, tuning, both_halves=both)
        for position, (candidate, score) in enumerate(zip(side, scores, strict=True)):
            if tuning.fusion == "rrf":
                score = 1.0 / (tuning.rrf_k + position + 1)
            fused[candidate.id] = fused.get(candidate.id, 0.0) + weight * score
            chunks.setdefault(candidate.id, candidate)
    order = {key: i for i, key in enumerate(chunks)}
    ranked = sorted(fused, key=lambda key: (-fused[key], order[key]))
    return [(chunks[key], fused[key]) for key in ranked]


def _side_scores(side: list[Candidate], kind: str, tuning: SearchTuning, *, both_halves: bool = False) -> list[float]:
    scores = [c.score for c in side]
    if tuning.fusion == "minmax":
        low, high = min(scores), max(scores)
        span = (high - low) or 1.0
        return [(s - low) / span for s in scores]
    if kind != "dense":  # cosine is comparable across queries as it is; BM25 is scaled to the best
        best = max(scores) or 1.0
        scores = [s / best for s in scores]
    if both_halves and tuning.fusion == "score" and tuning.baseline:
        # What the other half did not return scored below this half's weakest candidate, not nothing.
        floor = tuning.baseline * min(scores)
        scores = [s - floor for s in scores]
    return scores


def group_pages(ranked: list[tuple[Candidate, float]], k: int, tuning: SearchTuning = DEFAULT_TUNING) -> list[dict[str, Any]]:
    """One result per page, best page first: its best chunk, scored with ``page_weight`` times its
    next ``page_chunks`` best chunks added; ``matches``: how many of its chunks were candidates."""
    results = []
    for _, score, chunks in _pages(ranked, tuning)[:k]:
        result = hit(chunks[0][0].payload, score)
        result["matches"] = len(chunks)
        results.append(result)
    return results


def _pages(ranked: list[tuple[Candidate, float]], tuning: SearchTuning) -> list[tuple[str, float, list[tuple[Candidate, float]]]]:
    pages: dict[str, list[tuple[Candidate, float]]] = {}
    for candidate, score in ranked:
        pages.setdefault(_page_key(candidate), []).append((candidate, score))
    scored = []
    for order, (url, chunks) in enumerate(pages.items()):
        chunks.sort(key=lambda pair: -pair[1])
        extra = sum(score for _, score in chunks[1:1 + tuning.page_chunks])
        scored.append((chunks[0][1] + tuning.page_weight * extra, order, url, chunks))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [(url, score, chunks) for score, _, url, chunks in scored]


def collapse(hits: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """The first ``k`` hits with distinct texts; later copies are counted on the first."""
    kept: dict[str, dict[str, Any]] = {}
    for result in hits:
        key = " ".join(result["text"].split())
        if key in kept:
            kept[key]["duplicates"] += 1
        elif len(kept) < k:
            kept[key] = result
    return list(kept.values())


def _url(payload: dict[str, Any]) -> str | None:
    return (payload.get("metadata") or {}).get("source_url")


def _page_key(candidate: Candidate) -> str:
    return _url(candidate.payload) or str(candidate.id)


def hit(payload: dict[str, Any], score: float) -> dict[str, Any]:
    """One result as ``scrapy search --json`` prints it."""
    metadata = payload.get("metadata", {})
    url, anchor = metadata.get("source_url"), metadata.get("anchor")
    return {
        "url": url,
        # The chunk's heading, to cite: the page's URL with the heading's fragment when it has one.
        "link": f"{url}#{anchor}" if url and anchor else url,
        "title": metadata.get("title"),
        "section": metadata.get("section") or "",
        "score": round(float(score), 4),
        "heading_path": metadata.get("headings", []),
        "chunk_index": metadata.get("chunk_index"),
        "author": metadata.get("author"),
        "published": metadata.get("published"),
        "modified": metadata.get("modified"),
        "domain": metadata.get("domain"),
        "version": metadata.get("version"),
        "versions": metadata.get("versions") or [],
        "text": payload.get("page_content", ""),
        "duplicates": 0,
    }
