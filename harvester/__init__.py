"""Harvester: crawl documentation sites into a chunked, embedded Qdrant collection."""

__version__ = "0.1.0"
PROJECT_URL = "https://github.com/harvester-rag/harvester"
