"""Harvester's downloader and spider middlewares."""
