"""Harvester's own signals, so that the run report learns about pages without reaching into components.

``page_skipped(url, reason)``: a page was fetched but is not stored (no content, duplicate...).
``page_failed(url, reason)``: a page could not be fetched or processed.
``page_low_quality(url, quality)``: a page was stored, but its extraction scored low.
``page_aliased(url, alias, copy)``: ``alias`` serves the same content as the stored page ``url``
(``copy``: it is another page with that content, not merely another URL of it).
``page_versioned(url, version)``: the stored page ``url`` is also the text of ``version``'s copy of it.
``page_near_duplicate(url, original, similarity)``: ``url`` nearly repeats the page ``original``.
``page_aggregate(url, held_by, stored, ...)``: the page ``url`` was found to be an aggregate of the
kept pages ``held_by``. ``stored``: it was already written, and the index deletes its points but
those ``keep(text)`` accepts (its own passages); otherwise ``own_passages`` of it were kept.
``chunks_superseded(ids)``: stored chunk points that boilerplate now covers; the index deletes them.
``host_refused(host, reason)``: the SSRF guard refused a host (sent once per host).
``pages_indexed(items)``: the index pipeline wrote these pages' points to Qdrant.
"""

page_skipped = object()
page_failed = object()
page_low_quality = object()
page_aliased = object()
page_near_duplicate = object()
page_versioned = object()
chunks_superseded = object()
page_aggregate = object()
host_refused = object()
pages_indexed = object()
