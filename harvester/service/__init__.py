"""Search as a service: the MCP server's core (Scrapy-free)."""
