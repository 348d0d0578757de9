"""``scrapy runspider``, as Scrapy has it, with Harvester's settings checked first (exit status 2)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.commands.runspider import Command as ScrapyRunSpiderCommand

from harvester.commands import settings_valid
from harvester.commands.startup import tune_process

if TYPE_CHECKING:
    import argparse


class Command(ScrapyRunSpiderCommand):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        tune_process()
        if not settings_valid(self):
            return
        super().run(args, opts)
