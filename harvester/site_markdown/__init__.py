"""The site's own Markdown: ``llms.txt`` indexes and the Markdown twins of pages, used where they
hold what the HTML shows."""
