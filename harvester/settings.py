"""Harvester's Scrapy settings: the module Scrapy and Scrapyd load (it ships in the egg).

Defaults live in ``harvester.addon.HarvesterAddon``; this module names the project, enables the
add-on and reads the environment, since Scrapy maps no environment variables onto settings.
"""

import os

BOT_NAME = "harvester"
SPIDER_MODULES = ["harvester.spiders"]
NEWSPIDER_MODULE = "harvester.spiders"
COMMANDS_MODULE = "harvester.commands"
ADDONS = {"harvester.addon.HarvesterAddon": 0}
LOG_LEVEL = os.environ.get("HARVESTER_LOG_LEVEL", "INFO")
# The SSRF guard's resolver. Scrapy installs it for the process from these settings, before
# add-ons run, so it cannot live in the add-on's defaults.
TWISTED_DNS_RESOLVER = "harvester.guard.resolver.GuardedResolver"

_ENVIRONMENT = {
    "QDRANT_URL": "QDRANT_URL",
    "QDRANT_API_KEY": "QDRANT_API_KEY",
    "HARVESTER_QDRANT_PATH": "HARVESTER_QDRANT_PATH",
    "HARVESTER_QDRANT_COLLECTION": "HARVESTER_QDRANT_COLLECTION",
    "HARVESTER_EMBEDDING_MODEL": "HARVESTER_EMBEDDING_MODEL",
    "HARVESTER_EMBEDDING_DEVICE": "HARVESTER_EMBEDDING_DEVICE",
    "HARVESTER_EMBEDDING_BACKEND": "HARVESTER_EMBEDDING_BACKEND",
    "HARVESTER_REPORT_DIR": "HARVESTER_REPORT_DIR",
    "HARVESTER_ALLOWED_HOSTS": "HARVESTER_ALLOWED_HOSTS",
    "HARVESTER_PROXY": "HARVESTER_PROXY",
    "HARVESTER_PROXY_MODE": "HARVESTER_PROXY_MODE",
    "REDIS_URL": "REDIS_URL",
    "HARVESTER_RENDER": "HARVESTER_RENDER",
    "HARVESTER_BROWSER_PATH": "HARVESTER_BROWSER_PATH",
    "HARVESTER_BROWSER_ARGS": "HARVESTER_BROWSER_ARGS",
    "HARVESTER_CLUSTER": "HARVESTER_CLUSTER",
    "HARVESTER_CLUSTER_CRAWL": "HARVESTER_CLUSTER_CRAWL",
    "HARVESTER_SITE_PROFILES_DIR": "HARVESTER_SITE_PROFILES_DIR",
}
for _setting, _variable in _ENVIRONMENT.items():
    if os.environ.get(_variable):
        globals()[_setting] = os.environ[_variable]
