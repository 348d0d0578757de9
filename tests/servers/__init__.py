"""Loopback servers and site builders for the tests: HTTP sites (``sitesrv``, with the sites of
``sites``, ``recrawl_site``, ``hostile``), proxies (``proxysrv``), Redis (``redisrv``), a stub name
table under the SSRF guard (``stubdns``) and generated PDFs (``pdfgen``). Every server binds
127.0.0.0/8 only. Session-scoped fixtures that share them live in ``tests/conftest.py``."""
