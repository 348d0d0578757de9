"""The add-on's defaults and component wiring: pipeline order, switches, user settings over the
add-on's, and components that are off not even listed."""

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler

from harvester.chunking.pipeline import ChunkingPipeline
from harvester.dedup.pipeline import DedupPipeline
from harvester.embedding.pipeline import EmbeddingPipeline
from harvester.index.pipeline import IndexPipeline
from tests.components import components, crawler_with
from tests.crawl import REPO


def test_addon_defaults_and_pipeline_order():
    settings = crawler_with().settings
    assert settings.getbool("ROBOTSTXT_OBEY") and settings.getbool("AUTOTHROTTLE_ENABLED")
    assert settings["USER_AGENT"].startswith("Harvester/")
    assert not settings.getbool("TELNETCONSOLE_ENABLED")
    # Scrapy starts CONCURRENT_ITEMS tasks for every response's output (scrapy.utils.asyncio
    # _parallel_asyncio): 100 by default, for a page and a few links.
    assert settings.getint("CONCURRENT_ITEMS") == 16
    pipelines = components(settings, "ITEM_PIPELINES")
    order = sorted((pipelines[c], c) for c in (DedupPipeline, ChunkingPipeline, EmbeddingPipeline, IndexPipeline))
    assert [c for _, c in order] == [DedupPipeline, ChunkingPipeline, EmbeddingPipeline, IndexPipeline]
    assert "vectors" not in settings.getlist("FEED_EXPORT_FIELDS")


@pytest.mark.parametrize("switched_on", [False, True])
def test_extensions_that_listen_on_a_port_are_not_even_imported_when_off(switched_on):
    """Scrapy imports every extension it lists to learn that it is off: the remote-control server
    imports aiohttp (a tenth of a second of every crawl's start). Switched on, both are there."""
    import json
    import subprocess
    import sys

    code = ("import sys, json; from scrapy.utils.test import get_crawler; "
            "from scrapy.extension import ExtensionManager; from harvester.addon import HarvesterAddon; "
            "crawler = get_crawler(settings_dict={'ADDONS': {HarvesterAddon: 0}, **json.loads(sys.argv[1])}); "
            "crawler._apply_settings(); "
            "listed = list(crawler.settings.get_component_priority_dict_with_base('EXTENSIONS')); "
            "print(json.dumps([listed, [m for m in ('aiohttp', 'scrapy.extensions.remote_control', "
            "'scrapy.extensions.telnet') if m in sys.modules]]))")
    switches = {"REMOTE_CONTROL_ENABLED": switched_on, "TELNETCONSOLE_ENABLED": switched_on}
    done = subprocess.run([sys.executable, "-c", code, json.dumps(switches)], capture_output=True, text=True,
                          cwd=REPO, check=True)
    listed, imported = json.loads(done.stdout.strip().splitlines()[-1])
    ours = {"scrapy.extensions.remote_control.RemoteControl", "scrapy.extensions.telnet.TelnetConsole"}
    if switched_on:
        assert ours <= set(listed)
    else:
        assert not ours & set(listed) and imported == []
    assert "harvester.report.extension.RunReport" in listed


@pytest.mark.parametrize("key", [IndexPipeline, "harvester.index.pipeline.IndexPipeline"])
def test_a_component_turned_off_stays_off_however_it_is_named(key):
    settings = crawler_with(ITEM_PIPELINES={key: None}).settings
    assert IndexPipeline not in components(settings, "ITEM_PIPELINES")
    assert DedupPipeline in components(settings, "ITEM_PIPELINES")


@pytest.mark.parametrize(("component", "switch"), [(IndexPipeline, "HARVESTER_INDEX_ENABLED"),
                                                    (EmbeddingPipeline, "HARVESTER_EMBEDDING_ENABLED")])
def test_a_pipeline_switched_off_is_not_even_listed(component, switch):
    """Scrapy imports every listed component to learn that it is off (Qdrant's client, the
    embedding process pool): one switched off by its setting is not listed."""
    assert component in components(crawler_with().settings, "ITEM_PIPELINES")
    assert component not in components(crawler_with(**{switch: False}).settings, "ITEM_PIPELINES")
    assert DedupPipeline in components(crawler_with(**{switch: False}).settings, "ITEM_PIPELINES")


def test_user_settings_override_addon_defaults():
    settings = crawler_with(USER_AGENT="MyBot/1.0", HARVESTER_QDRANT_COLLECTION="x").settings
    assert settings["USER_AGENT"] == "MyBot/1.0"
    assert settings["HARVESTER_QDRANT_COLLECTION"] == "x"


@pytest.mark.parametrize(
    ("component", "toggle"),
    [(DedupPipeline, "HARVESTER_DEDUP_ENABLED"), (ChunkingPipeline, "HARVESTER_CHUNKING_ENABLED"),
     (EmbeddingPipeline, "HARVESTER_EMBEDDING_ENABLED"), (IndexPipeline, "HARVESTER_INDEX_ENABLED")],
)
def test_each_pipeline_switches_off(component, toggle):
    with pytest.raises(NotConfigured):
        build_from_crawler(component, crawler_with(**{toggle: False}))
    assert build_from_crawler(component, crawler_with()) is not None


def test_invalid_pipeline_settings_disable_with_a_reason():
    # A bad batch size stops the crawl in the settings check; it never turns embedding off silently.
    from scrapy.settings import Settings

    from harvester.config.checks import check_settings
    from harvester.config.spec import SPEC
    from harvester.exceptions import InvalidSettings

    settings = Settings({setting.name: setting.default for setting in SPEC})
    settings.set("HARVESTER_EMBEDDING_BATCH_SIZE", 0)
    with pytest.raises(InvalidSettings, match="HARVESTER_EMBEDDING_BATCH_SIZE"):
        check_settings(settings)
    assert build_from_crawler(EmbeddingPipeline, crawler_with(HARVESTER_EMBEDDING_BATCH_SIZE=0))
    with pytest.raises(NotConfigured, match="needs vectors"):
        build_from_crawler(IndexPipeline, crawler_with(HARVESTER_EMBEDDING_ENABLED=False))
