"""HTML main element -> Markdown: the converter registry, name -> function(lxml element) -> Markdown.

``"lxml"`` (the default, :mod:`harvester.extract.converters.lxml`) and ``"markdownify"``
(:mod:`harvester.extract.converters.markdownify`) write the same Markdown; ``"html-to-markdown"``
(:mod:`harvester.extract.converters.html_to_markdown`) is registered lazily when that module can be
found. Each is imported when first selected. What they all follow is in
:mod:`harvester.extract.converters.conventions`; what is done to the element before any of them
reads it, in :mod:`harvester.extract.rewrites`.
"""
from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable

__all__ = ["DEFAULT_CONVERTER", "Converter", "available_converters", "get_converter", "register_converter"]

Converter = Callable[[object], str]
_LOADERS: dict[str, Callable[[], Converter]] = {}
_HTML_TO_MARKDOWN_MODULE = "harvester.extract.converters.html_to_markdown"


def register_converter(name: str, loader: Callable[[], Converter]) -> None:
    """Register ``loader``, called on selection, returning a function
    (lxml main element) -> Markdown, already passed through
    :func:`~harvester.extract.converters.conventions.tidy_markdown`
    (extract_page does not tidy it again). Loading lazily keeps optional packages
    optional until someone selects them."""
    _LOADERS[name] = loader


def _load_html_to_markdown() -> Converter:
    try:
        module = importlib.import_module(_HTML_TO_MARKDOWN_MODULE)
    except ImportError as exc:
        raise ValueError(f"converter 'html-to-markdown' is unavailable: {exc}") from exc
    fn = getattr(module, "element_to_markdown", None)
    if not callable(fn):
        raise ValueError(f"{_HTML_TO_MARKDOWN_MODULE} has no element_to_markdown(element) -> str")
    return fn


def _html_to_markdown_present() -> bool:
    try:
        return importlib.util.find_spec(_HTML_TO_MARKDOWN_MODULE) is not None
    except (ImportError, ValueError):
        return False


def available_converters() -> list[str]:
    """Names accepted by :func:`get_converter`."""
    if "html-to-markdown" not in _LOADERS and _html_to_markdown_present():
        register_converter("html-to-markdown", _load_html_to_markdown)
    return sorted(_LOADERS)


def get_converter(name: str) -> Converter:
    """The converter registered as ``name``; ValueError when unknown or when
    its optional dependency cannot be imported."""
    if name not in _LOADERS:
        available_converters()  # the html-to-markdown adapter may have appeared since import
    loader = _LOADERS.get(name)
    if loader is None:
        raise ValueError(f"unknown converter {name!r}; available: {', '.join(available_converters())}")
    return loader()


def _module_converter(module: str) -> Callable[[], Converter]:
    """A loader of ``module``'s ``element_to_markdown``, imported by name so that a converter's
    libraries (bs4 and markdownify for ``"markdownify"``) load only when it is selected."""
    def load() -> Converter:
        return importlib.import_module(module).element_to_markdown
    return load


DEFAULT_CONVERTER = "lxml"
register_converter("lxml", _module_converter("harvester.extract.converters.lxml"))
register_converter("markdownify", _module_converter("harvester.extract.converters.markdownify"))
available_converters()
