"""Scrapy's ``LinkExtractor``, with each distinct ``href`` worked out once per crawl.

``PageLinkExtractor.urls(response)`` gives the pages a response links to: exactly the URLs of
``extract_links(response)``, without fragments and each once, in document order. Scrapy's
extractor resolves, escapes (``safe_url_string``) and filters every anchor of every page; here an
``href`` is resolved and filtered once per page directory (``harvester.urls.links.join_key``) and
remembered, by Scrapy's own code, so the rules are Scrapy's: ``<base href>``, the response
encoding, ``allow``/``deny``, the domains and ``deny_extensions``; ``hosts`` drops the absolute
links to other hosts before any of that. ``extract_links`` itself is unchanged (the ``Link``
objects, with their text and ``nofollow`` flag, for callers that want them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from lxml import etree
from scrapy.link import Link
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.misc import arg_to_iter
from scrapy.utils.response import get_base_url
from w3lib.html import strip_html5_whitespace
from w3lib.url import safe_url_string

from harvester.spiders._base import page_selector
from harvester.urls.links import (
    DEFAULT_CACHE_SIZE,
    BoundedCache,
    join_key,
    plain_host,
    relative_to_page,
    without_fragment,
)

if TYPE_CHECKING:
    from collections.abc import Collection

    from scrapy.http import TextResponse

_XHTML = "http://www.w3.org/1999/xhtml"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


class PageLinkExtractor(LinkExtractor):
    """A ``LinkExtractor`` whose ``urls()`` remembers what each ``href`` resolves to."""

    def __init__(self, *args: Any, tags: Any = ("a", "area"), attrs: Any = ("href",),
                 cache_size: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, tags=tags, attrs=attrs, **kwargs)
        names = [*arg_to_iter(tags), *arg_to_iter(attrs)]
        # Options whose answer depends on more than the href and the page's directory (the link
        # text, a region of the page, a user function) take Scrapy's own path, uncached.
        self._cacheable = (
            not (self.restrict_xpaths or self.restrict_text or self.canonicalize or kwargs.get("process_value")
                 or kwargs.get("deny_tags") or kwargs.get("deny_attrs"))
            and all(name and set(name) <= _NAME_CHARS for name in names)
        )
        self._hrefs = _href_xpath(arg_to_iter(tags), arg_to_iter(attrs)) if self._cacheable else None
        # Without allow/deny regexes (which could match a fragment), an href's fragment changes
        # nothing it resolves to once fragments are dropped: one answer for "page.html#a", "#b"...
        self._drop_fragments = not (self.allow_res or self.deny_res)
        size = cache_size or DEFAULT_CACHE_SIZE
        self._resolved: BoundedCache[tuple[str, str, str, str], str | None] = BoundedCache(self._resolve, size)
        # Whether a URL is allowed depends on the URL alone (restrict_text, which reads the link's
        # text, is not cacheable): one answer for every directory whose pages link to it.
        self._allowed: BoundedCache[str, bool] = BoundedCache(self._url_allowed, size)

    def urls(self, response: TextResponse, hosts: Collection[str] | None = None) -> list[str]:
        """The distinct URLs, without fragments, that ``extract_links(response)`` would give.

        ``hosts``: the hosts (``harvester.urls.hosts.host_key``) of the links wanted; an ``href``
        naming another host is dropped before it is resolved. Others may still lead elsewhere (a
        relative link under a ``<base href>``, a host only escaping tells): the caller checks them.
        """
        if self._hrefs is None:
            return list(dict.fromkeys(without_fragment(link.url) for link in self.extract_links(response)))
        base_url = get_base_url(response)
        page_url, encoding = response.url, response.encoding
        directory = join_key(base_url), join_key(page_url)
        strip = self.link_extractor.strip
        found: dict[str, None] = {}
        drop_fragments = self._drop_fragments
        for href in self._hrefs(page_selector(response).root):
            if strip:
                href = strip_html5_whitespace(href)
            if drop_fragments:
                href = without_fragment(href)
            if hosts is not None and href[:1] in "hH/" and (host := plain_host(href)) is not None \
                    and host not in hosts:
                continue
            if relative_to_page(href):
                key = (base_url, page_url, encoding, href)
            else:
                key = (*directory, encoding, href)
            url = self._resolved(key)
            if url is not None:
                found[url] = None
        return list(found)

    def _resolve(self, key: tuple[str, str, str, str]) -> str | None:
        """What Scrapy's extractor makes of one ``href`` (``LxmlParserLinkExtractor._extract_links``
        then ``_link_allowed``), without the fragment; None when it drops it. ``key`` holds the
        page's base URL and URL, or their ``join_key``s: the join gives the same URL either way."""
        base_url, page_url, encoding, href = key
        try:
            url = urljoin(base_url, href)
            url = safe_url_string(url, encoding=encoding)
        except ValueError:
            return None
        url = urljoin(page_url, url)
        return without_fragment(url) if self._allowed(url) else None

    def _url_allowed(self, url: str) -> bool:
        return self._link_allowed(Link(url))


def _href_xpath(tags: Any, attrs: Any) -> etree.XPath:
    """One compiled XPath for the link attributes, in document order; XHTML elements too, which
    Scrapy's extractor also takes (it strips their namespace)."""
    steps = [f"//{prefix}{tag}/@{attr}" for tag in tags for attr in attrs for prefix in ("", "x:")]
    return etree.XPath(" | ".join(steps), namespaces={"x": _XHTML}, smart_strings=False)
