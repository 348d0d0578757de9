"""The MCP server (``scrapy mcp``) and the warm search core it answers from (Scrapy-free)."""
