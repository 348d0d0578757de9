"""Adding Harvester's components to Scrapy's component dictionaries (``DOWNLOADER_MIDDLEWARES``,
``ITEM_PIPELINES``, ...) without overriding what the user set there, and without importing them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


def setdefault_component(settings: BaseSettings, name: str, path: str, priority: int | None) -> None:
    """``settings.setdefault_in_component_priority_dict`` for a component named by its import path,
    without importing it: left alone when the setting already names it, as a class or a path
    (Scrapy's own method compares what it loads with the class it is given, never equal to a
    path, so it would overwrite a user's ``None`` that turned the component off)."""
    components = settings.getdict(name)
    if any(import_path(key) == path for key in components):
        return
    components[path] = priority
    settings.set(name, components, settings.getpriority(name) or 0)


def import_path(component: Any) -> str:
    """The dotted path of a component given as a class or as its path."""
    return component if isinstance(component, str) else f"{component.__module__}.{component.__qualname__}"
