"""Git's manual, as Debian's git-doc ships it (AsciiDoc), crawled for real: the document's own
header (title, a manual page's NAME summary), one-line listings as code blocks and notes as quotes
come through; the footer does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import missing_prerequisite
from tests.crawl import NO_EMBEDDING, crawl
from tests.servers.sitesrv import SiteServer

pytestmark = pytest.mark.e2e

GIT_DOC = Path("/usr/share/doc/git-doc")


def test_git_manual_pages_keep_their_header_listings_and_notes(tmp_path: Path) -> None:
    if not (GIT_DOC / "git-commit.html").is_file():
        missing_prerequisite("Debian's git-doc is not installed (scripts/bootstrap.sh --test)")
    with SiteServer(root=GIT_DOC) as server:
        result = crawl("site", server.url + "git.html", tmp_path, settings=NO_EMBEDDING,
                       args={"allow": r"/(git|git-commit|gittutorial)\.html$"})
    assert result.returncode == 0, result.output[-3000:]
    pages = {item["url"].rsplit("/", 1)[1]: item["markdown"] for item in result.items}
    assert set(pages) == {"git.html", "git-commit.html", "gittutorial.html"}
    assert pages["git-commit.html"].startswith(
        "# git-commit(1) Manual Page\n\n## NAME\n\ngit-commit -\nRecord changes to the repository\n")
    assert "> **Note:** In addition, the date part is accepted in the following formats:" in pages["git-commit.html"]
    assert "```\n$ man git-log\n```\n\nor:\n\n```\n$ git help log\n```\n" in pages["gittutorial.html"]
    for name, markdown in pages.items():
        assert "Last updated" not in markdown, name
        assert not markdown.rstrip().endswith("---"), name
    assert "'harvester/pages/generator/asciidoc': 3" in result.output
