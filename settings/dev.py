"""Local development: debug logs, an HTTP cache for quick re-runs, a separate collection."""

from harvester.settings import *  # noqa: F403

LOG_LEVEL = "DEBUG"
HARVESTER_QDRANT_COLLECTION = "harvester-dev"
HTTPCACHE_ENABLED = True
HTTPCACHE_DIR = ".harvester/httpcache"
