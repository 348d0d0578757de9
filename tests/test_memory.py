"""glibc malloc tuning, by the environment and the setting."""

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler

from tests.components import crawler_with
from tests.crawl import REPO


def test_malloc_is_tuned_unless_the_environment_or_the_setting_says_otherwise():
    import platform
    import subprocess
    import sys

    from harvester.memory.extension import MallocTuning

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc only")
    code = "from harvester.memory import tune_malloc; print(' '.join(tune_malloc()))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]
    import os

    env = {**os.environ, "MALLOC_ARENA_MAX": "4"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.split() == ["MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]
    # A torch model in this process keeps glibc's own thresholds (a fixed one slowed it to
    # 0.70-0.85x); ONNX Runtime's arena is as fast under the fixed one (the default backend here).
    built = ("from scrapy.utils.misc import build_from_crawler; from tests.components import crawler_with; "
             "from harvester.memory.extension import MallocTuning; "
             "print(' '.join(build_from_crawler(MallocTuning, crawler_with(**{0})).applied))")
    for settings, applied in (
        ({"HARVESTER_EMBEDDING_BACKEND": "torch"}, ["MALLOC_ARENA_MAX"]),
        ({}, ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]),
        ({"HARVESTER_EMBEDDING_PROCESS": True}, ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]),
        ({"HARVESTER_EMBEDDING_ENABLED": False}, ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]),
    ):
        done = subprocess.run([sys.executable, "-c", built.format(settings)], capture_output=True, text=True,
                              check=True, cwd=REPO)
        assert done.stdout.split() == applied, settings
    with pytest.raises(NotConfigured):
        build_from_crawler(MallocTuning, crawler_with(HARVESTER_MALLOC_TUNING=False))
    assert "harvester.memory.extension.MallocTuning" in crawler_with().settings.getdict("EXTENSIONS")
