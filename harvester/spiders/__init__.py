"""The three Harvester spiders: ``docs``, ``sitemap`` and ``site``."""
