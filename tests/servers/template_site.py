"""A documentation site no profile knows, for the learned-template tests.

Every page repeats a top bar with a menu, a sidebar listing the pages (the current one marked), a
breadcrumb, a prev/next bar naming the neighbours (none before the first page, none after the
last), a licence notice inside ``<main>`` and a footer. The content repeats things on purpose: a
"Parameters:" label and a "See also" list on every page, the same code example on pages 2 and 3
and the same note on pages 4 and 5; they are content and must stay.
"""

from __future__ import annotations

from html import escape

from tests.servers.sitesrv import Route

TITLES = ["Overview", "Installing Acme", "First steps", "Configuration files", "Plugins", "Command line",
          "Deployment", "Logging", "Testing widgets", "Upgrading", "Troubleshooting", "Glossary"]
CHROME = ("Acme Widgets Docs", "Guide", "Blog", "Documentation", "Home /",
          "licensed under CC BY 4.0", "Copyright 2024 Acme Corp", "Built by Acme", "Privacy", "Imprint",
          "→", "←")
SHARED_CODE = 'import acme\n\nboard = acme.load("board.toml")\nboard.run(strict=True)'
SHARED_NOTE = ("Widgets created before version 2 must be migrated with the acme-migrate tool before "
               "they can be loaded again.")


def path(i: int) -> str:
    return "/" if i == 0 else f"/docs/page{i}.html"


def content(i: int) -> str:
    """The page's own content, as HTML."""
    title = TITLES[i]
    parts = [f"<h1>{escape(title)}</h1>",
             (f"<p>{escape(title)} explains how widgets of kind {i} behave when a board loads them, "
             f"and which of their {i + 3} options matter most.</p>"),
             "<h2>Options</h2>",
             "<p><strong>Parameters:</strong></p>",
             (f"<ul><li><code>size_{i}</code>: the size of widget {i} in cells</li>"
             f"<li><code>colour_{i}</code>: its colour, one of {i + 2} names</li></ul>")]
    if i in (2, 3):
        parts.append(f'<p>Load a board:</p><pre><code class="language-python">{escape(SHARED_CODE)}</code></pre>')
    if i in (4, 5):
        parts.append(f'<div class="note"><p>{escape(SHARED_NOTE)}</p></div>')
    if i == 6:
        parts.append("<table><tr><th>Target</th><th>Command</th></tr><tr><td>staging</td><td>acme deploy -s</td></tr>"
                     "<tr><td>production</td><td>acme deploy -p</td></tr></table>")
    parts.append(f"<p>Widgets of kind {i} are checked again whenever page {i} of a board changes.</p>")
    others = [j for j in (i - 1, i + 1, (i + 5) % len(TITLES)) if 0 <= j < len(TITLES) and j != i]
    parts.append("<h2>See also</h2><ul>" + "".join(
        f'<li><a href="{path(j)}">{escape(TITLES[j])}</a></li>' for j in others) + "</ul>")
    return "\n".join(parts)


def page(i: int, n: int = len(TITLES)) -> str:
    title = TITLES[i]
    sidebar = "".join(
        f'<li class="{"current" if j == i else "item"}"><a href="{path(j)}">{escape(TITLES[j])}</a></li>'
        for j in range(n))
    prev = f'<a href="{path(i - 1)}">← {escape(TITLES[i - 1])}</a>' if i > 0 else ""
    nxt = f'<a href="{path(i + 1)}">{escape(TITLES[i + 1])} →</a>' if i + 1 < n else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)} | Acme Widgets Docs</title></head>
<body>
<div class="topbar"><a class="brand" href="/">Acme Widgets Docs</a>
  <ul class="links"><li><a href="/">Guide</a></li><li><a href="/docs/page11.html">Reference</a></li>
  <li><a href="/">Blog</a></li></ul></div>
<div class="wrap">
  <div class="left"><p class="label">Documentation</p><ul>{sidebar}</ul></div>
  <main class="content">
    <p class="crumbs"><a href="/">Home</a> / {escape(title)}</p>
    {content(i)}
    <p class="flip">{prev} | {nxt}</p>
    <p class="notice">Acme Widgets documentation is licensed under CC BY 4.0. Copyright 2024 Acme Corp
      and contributors; report mistakes on the issue tracker.</p>
  </main>
</div>
<div class="bottom"><p>Built by Acme. <a href="/">Privacy</a> · <a href="/">Imprint</a></p></div>
</body></html>
"""


def pages(n: int = len(TITLES)) -> dict[str, str]:
    return {path(i): page(i, n) for i in range(n)}


def routes(n: int = len(TITLES)) -> dict[str, Route]:
    return {p: Route(html, headers={"Content-Type": "text/html; charset=utf-8"}) for p, html in pages(n).items()}
