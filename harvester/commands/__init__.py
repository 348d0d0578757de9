"""Harvester's scrapy commands: ``crawl`` and ``runspider`` (Scrapy's, with the settings checked
first and exit codes), ``search``, ``mcp`` (the MCP server) and ``export`` (a collection into a
server or local mode)."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

from harvester.config.checks import InvalidSettings, check_settings

if TYPE_CHECKING:
    from scrapy.commands import ScrapyCommand
    from scrapy.settings import Settings

logger = logging.getLogger(__name__)

def effective_settings(settings: Settings) -> Settings:
    """Project settings with Harvester's add-on defaults under them, as a crawl would see them.

    Commands that run no crawler never load add-ons, so they apply ours here.
    """
    # Imported here: the add-on imports every component (seconds), which `scrapy search` and
    # `scrapy mcp` do without (``harvester.commands.search.index_settings``).
    from harvester.addon import HarvesterAddon

    merged = settings.copy()
    HarvesterAddon().update_settings(merged)
    return merged


def settings_problem(settings: Settings, with_defaults: bool = False) -> str | None:
    """What is wrong with ``settings`` as a crawl will see them (one line), or None.
    ``with_defaults``: the spec's defaults are already under them."""
    try:
        check_settings(settings if with_defaults else effective_settings(settings))
    except InvalidSettings as exc:
        return f"invalid setting: {exc}"
    return None


def settings_valid(command: ScrapyCommand, settings: Settings | None = None) -> bool:
    """Check the command's settings as a crawl will see them (``settings``: the command's, with the
    spec's defaults already under them); on a bad value, say so in one line and set exit status 2.
    (The add-on checks every crawler too; this stops the command before a crawler process starts,
    with the exit status a scheduler can tell from a failed crawl.)"""
    assert command.settings is not None
    if settings is None:
        problem = settings_problem(command.settings)
    else:
        problem = settings_problem(settings, with_defaults=True)
    if problem is not None:
        fail(command, problem, exitcode=2)
        return False
    return True


def fail(command: ScrapyCommand, message: str, exitcode: int) -> None:
    print(f"harvester: error: {message}", file=sys.stderr)
    if command.settings is not None and command.settings.get("LOG_FILE"):
        # Scrapyd keeps a job's LOG_FILE, not its stderr.
        logger.error("harvester: error: %s", message)
    command.exitcode = exitcode
