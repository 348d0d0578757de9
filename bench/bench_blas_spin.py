"""Benchmark: the CPU that OpenBLAS's spinning threads cost a process that imports NumPy.

Each round starts two fresh interpreters, in turn: one with the environment Harvester's commands
give themselves (``harvester.threads.quiet_blas_threads``: ``OPENBLAS_THREAD_TIMEOUT=16``), one
with OpenBLAS's default spin (the variable unset). Each imports NumPy, as a crawl does when it
builds its deduplication pipeline and ``scrapy search`` does with the Qdrant client, then idles for
0.3 s (the default spin lasts about 0.1 s), and reports its CPU (user + system, every thread)
from the import on. The figures are medians; their ratio is what the short spin leaves.

    .venv/bin/python bench/bench_blas_spin.py [--rounds 9] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harvester.threads import BLAS_THREAD_TIMEOUT

CHILD = """
import resource, time
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
started = cpu()
import numpy
time.sleep(0.3)
print(round((cpu() - started) * 1000, 1))
"""


def import_cpu_ms(timeout: str | None) -> float:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    if timeout is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = timeout
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, check=True)
    return float(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    runs: dict[str, list[float]] = {"harvester": [], "openblas_default": []}
    for round_ in range(args.rounds):
        order = ("harvester", "openblas_default") if round_ % 2 == 0 else ("openblas_default", "harvester")
        for name in order:
            runs[name].append(import_cpu_ms(BLAS_THREAD_TIMEOUT if name == "harvester" else None))
    medians = {name: statistics.median(values) for name, values in runs.items()}
    result = {"cpus": os.cpu_count(), "rounds": args.rounds, "cpu_ms": runs, "median_cpu_ms": medians,
              "ratio": round(medians["harvester"] / medians["openblas_default"], 3)}
    print(json.dumps(result, indent=1))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
