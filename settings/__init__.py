"""Environment overlays (not shipped in the Scrapyd egg). Pick one with SCRAPY_PROJECT=dev|ci."""
