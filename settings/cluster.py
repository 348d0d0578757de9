"""Cluster mode: a shared Redis frontier (REDIS_URL) and a Qdrant server (QDRANT_URL).

``SCRAPY_PROJECT=cluster scrapy crawl docs -a start=URL`` on every worker. Under Scrapyd (which
ships harvester/settings.py only) set ``HARVESTER_CLUSTER=1`` in its environment or per job.
"""

from harvester.settings import *

HARVESTER_CLUSTER = True
