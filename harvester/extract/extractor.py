"""One HTML page through extraction, in the extraction worker: parsed once, its signals read and its
blocks cut before anything changes the tree, then extracted without its site's template and
classified. Scrapy-free: a response is only read (URL, text, body, status, flags, meta)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from harvester.extract.classify import PageType, Signals, Verdict, decide, read_signals
from harvester.extract.page import (
    ExtractedPage,
    NoContent,
    check_text,
    extract_page,
    parse_html,
    template_scope,
)
from harvester.extract.template import (
    SAMPLE_MAX_BYTES,
    Block,
    PageSignature,
    Removal,
    Template,
    TemplateLearner,
    page_blocks,
    remove_template,
    signature,
)
from harvester.render.frames import Frame, frames_of, merge_frames, same_site_iframes
from harvester.urls.hosts import host_key, host_name

if TYPE_CHECKING:
    from scrapy.http import HtmlResponse

    from harvester.sites import SiteProfiles


@dataclass
class Prepared:
    """A page parsed and cut into blocks, waiting for its host's template."""

    response: HtmlResponse
    doc: Any
    signals: Signals | None
    blocks: list[Block] | None
    signature: PageSignature | None
    no_content: str | None = None
    removed: bool = False  # the template changed what extraction keeps of it


class Extraction(NamedTuple):
    """What extraction made of a page: ``generator`` is the documentation generator that
    recognised it, also when its text was too short or only the site's menus (not kept)."""

    verdict: Verdict
    page: ExtractedPage | None
    no_content: str | None
    frames: list[Any]
    removal: Removal
    generator: str | None


class PageExtractor:
    """Extracts pages with one crawl's settings: ``min_chars`` (``HARVESTER_EXTRACTION_MIN_CHARS``),
    the Markdown ``converter``, the content ``selectors`` by host (``HARVESTER_CONTENT_SELECTORS``)
    and the site profiles' content selectors."""

    def __init__(self, *, min_chars: int, converter: str | None, selectors: Mapping[str, Any],
                 profiles: SiteProfiles) -> None:
        self._min_chars = min_chars
        self._converter = converter
        self._selectors = selectors
        self._profiles = profiles

    def content_selector(self, url: str) -> str | None:
        """``HARVESTER_CONTENT_SELECTORS`` for the host, else the site profile's resolved selector
        (``-a content_selector``/``-s HARVESTER_CONTENT_SELECTOR`` > profile > none)."""
        for key in (host_key(url), host_name(url)):
            if key in self._selectors:
                return str(self._selectors[key])
        return self._profiles.for_url(url).content_selector

    def prepare(self, response: HtmlResponse, learner: TemplateLearner) -> Prepared:
        """The page parsed, its signals and its blocks, before anything changes the tree."""
        try:
            doc = document(response)
        except NoContent as exc:
            return Prepared(response, None, None, None, None, exc.reason)
        signals = read_signals(doc, response.text, response.url)
        if len(response.body) > SAMPLE_MAX_BYTES or learner.template(host_key(response.url)) is not None:
            # Not walked for its blocks (they are read later, and only if the template removes
            # any: classify_and_extract) when it is too long to learn from (a long changelog costs
            # as much to walk as a dozen ordinary pages, and the sample is for the site's typical
            # pages), or when the template was decided while it waited for the worker (pages queue
            # behind a long one, each sent here before the sample was full). A dict lookup, safe
            # from the worker thread; the learner is otherwise only used from the reactor's.
            return Prepared(response, doc, signals, None, None)
        blocks = self.blocks(doc, response.url)
        return Prepared(response, doc, signals, blocks, signature(blocks))

    def blocks(self, doc: Any, url: str) -> list[Block]:
        """The page's blocks where its template is learned and removed (before anything changes
        the tree)."""
        return page_blocks(template_scope(doc, self.content_selector(url)))

    def classify_and_extract(
        self, response: HtmlResponse, with_frames: bool, template: Template | None, prepared: Prepared | None
    ) -> Extraction:
        """The page's signals (before extraction changes the tree), its extraction without the
        template's blocks, its verdict; for rendered pages the frames' content joins the page's."""
        removal = Removal()
        if prepared is not None:
            if prepared.doc is None:
                reason = prepared.no_content
                return Extraction(Verdict(PageType.EMPTY, reason or "empty"), None, reason, [], removal, None)
            doc, signals, blocks = prepared.doc, prepared.signals, prepared.blocks
        else:
            try:
                doc = document(response)
            except NoContent as exc:
                return Extraction(Verdict(PageType.EMPTY, exc.reason), None, exc.reason, [], removal, None)
            signals, blocks = read_signals(doc, response.text, response.url), None
        if blocks is None and template:  # not walked yet: too long to learn from, prepared late, or never held
            blocks = self.blocks(doc, response.url)

        def strip_template(root: Any) -> Removal:
            nonlocal removal
            removal = remove_template(blocks, template)
            return removal

        url = response.url
        page: ExtractedPage | None = None
        no_content = generator = None
        try:
            page = extract_page(response.text, url, min_chars=self._min_chars,
                                content_selector=self.content_selector(url), converter=self._converter, doc=doc,
                                template=strip_template if template and blocks else None)
            generator = page.generator
        except NoContent as exc:
            no_content, generator = exc.reason, exc.generator
        if prepared is not None and removal:
            # A sampled page: does the template change what is kept? If it changes no sampled page,
            # the host's further pages are spared the walk (TemplateLearner.settle).
            prepared.removed = _markdown(page) != _markdown(self._without_template(response))
        frames: list[Any] = []
        if with_frames:
            if "playwright" in response.flags:
                frames = frames_of(response.meta)
                if frames and page is not None:
                    page = replace(page, markdown=merge_frames(page.markdown, frames, self._frame_markdown))
            else:
                frames = same_site_iframes(signals.iframes, url)
        verdict = decide(signals, response.status, len(page.markdown) if page is not None else 0, generator)
        if verdict.reason == "navigation_only":  # what extraction kept is the site's menus
            page, no_content = None, verdict.reason
        return Extraction(verdict, page, no_content, frames, removal, generator)

    def _without_template(self, response: HtmlResponse) -> ExtractedPage | None:
        try:
            return extract_page(response.text, response.url, min_chars=self._min_chars,
                                content_selector=self.content_selector(response.url), converter=self._converter)
        except NoContent:
            return None

    def _frame_markdown(self, frame: Frame) -> str | None:
        try:
            return extract_page(frame.html, frame.url, min_chars=1, converter=self._converter).markdown
        except NoContent:
            return None


def _markdown(page: ExtractedPage | None) -> str | None:
    return page.markdown if page is not None else None


def document(response: HtmlResponse) -> Any:
    """The page's lxml tree; NoContent when the body is no markup (binary, JSON, a PDF)."""
    doc = _parsed_tree(response)
    if doc is None:
        return parse_html(response.text)
    check_text(response.text)
    return doc


def drop_tree(response: HtmlResponse) -> None:
    """Forget the page's parsed tree once extraction has changed it: whatever reads
    ``response.selector`` later gets the page parsed again, not what extraction left. The tree
    then goes with its last reference: Scrapy's Selector keeps its response, and the two (a large
    page's tree with them) otherwise waited for the collector to find the cycle."""
    if getattr(response, "_cached_selector", None) is not None:
        response._cached_selector = None


def _parsed_tree(response: HtmlResponse) -> Any:
    """The lxml tree the spider's callback already parsed, if it did, so extraction does not parse
    the page again (the callback is done with it). Parsing here otherwise would block the reactor."""
    selector = getattr(response, "_cached_selector", None)  # set by TextResponse.selector
    return selector.root if selector is not None else None
