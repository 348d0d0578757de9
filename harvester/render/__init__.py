"""JavaScript rendering: when a page goes through the browser (``policy``), which browser and
how it is launched (``browser``), iframes (``frames``), and the scrapy-playwright download handler
that keeps the browser behind the SSRF guard (``handler``, the only module importing Playwright)."""
