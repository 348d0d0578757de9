"""Harvester's scrapy commands: ``crawl`` (Scrapy's, with argument checks and exit codes) and ``search``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvester.addon import HarvesterAddon

if TYPE_CHECKING:
    from scrapy.settings import Settings


def effective_settings(settings: Settings) -> Settings:
    """Project settings with Harvester's add-on defaults under them, as a crawl would see them.

    Commands that run no crawler never load add-ons, so they apply ours here.
    """
    merged = settings.copy()
    HarvesterAddon().update_settings(merged)
    return merged
