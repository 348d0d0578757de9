"""Harvester's Scrapy settings: the module Scrapy and Scrapyd load (it ships in the egg).

Defaults live in the settings spec (``harvester.config.spec``), applied by the add-on; this module
names the project, enables the add-on and reads the environment variables the spec names, since
Scrapy maps no environment variables onto settings.
"""

import os

from harvester.config.spec import environment_settings as _environment_settings

BOT_NAME = "harvester"
SPIDER_MODULES = ["harvester.spiders"]
NEWSPIDER_MODULE = "harvester.spiders"
COMMANDS_MODULE = "harvester.commands"
ADDONS = {"harvester.addon.HarvesterAddon": 0}

globals().update(_environment_settings(os.environ))
