"""Component helpers for tests: crawlers with the add-on's defaults and wiring, component priority
dicts keyed by class, a small page item."""

from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

from harvester.addon import HarvesterAddon
from harvester.items import PageItem


class UncheckedAddon(HarvesterAddon):
    """The add-on's defaults and wiring without its settings check, so that each component's own
    refusal of a bad value (NotConfigured) can be tested: the real add-on stops such a crawler
    before any component is built (test_config.py)."""

    @classmethod
    def from_crawler(cls, crawler):
        return cls()


def crawler_with(**settings):
    return get_crawler(settings_dict={"ADDONS": {UncheckedAddon: 0}, **settings})


def components(settings, name):
    """A component priority dict with its base, keyed by class (the add-on names its components
    by import path)."""
    return {load_object(key): value for key, value in settings.get_component_priority_dict_with_base(name).items()}


def page(url="http://h/a.html", markdown="# A\n\ntext", content_hash="h1"):
    return PageItem(url=url, title="A", markdown=markdown, content_hash=content_hash)
