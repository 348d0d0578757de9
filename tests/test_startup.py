"""Harvester's process tweaks (OpenBLAS's spinning, the young generation's GC threshold) are made by
the commands that run, never by importing the project's settings or command modules."""

from __future__ import annotations

import os
import subprocess
import sys

from harvester.memory import YOUNG_GC_THRESHOLD
from harvester.threads import BLAS_THREAD_TIMEOUT
from tests.crawl import REPO


def python(code: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env,
                          check=True)
    return done.stdout.split()


def test_importing_the_settings_and_the_commands_changes_nothing_in_the_process() -> None:
    code = ("import gc, os, sys, importlib, pkgutil; threshold = gc.get_threshold(); import harvester.settings; "
            "print('harvester.commands' in sys.modules); import harvester.commands; "
            "[importlib.import_module(f'harvester.commands.{m.name}') "
            "for m in pkgutil.iter_modules(harvester.commands.__path__)]; "
            "print(gc.get_threshold() == threshold, os.environ.get('OPENBLAS_THREAD_TIMEOUT'))")
    assert python(code) == ["False", "True", "None"]


def test_a_command_tunes_its_process_before_numpy_loads() -> None:
    code = ("import gc, os, sys; from harvester.commands.startup import tune_process; tune_process(); "
            "print(gc.get_threshold()[0], os.environ.get('OPENBLAS_THREAD_TIMEOUT'), 'numpy' in sys.modules)")
    assert python(code) == [str(YOUNG_GC_THRESHOLD), BLAS_THREAD_TIMEOUT, "False"]
