"""Harvester's Scrapy extensions."""
