"""The test suite's wall time, before and after a change, measured side by side in one run.

    .venv/bin/python bench/bench_suite.py [--base REF] [--pytest-args "-m 'not e2e'"] [--order base,head]

Runs ``pytest`` on a ``git archive`` of REF (default: the commit before the in-process test
harness) and on this working tree, one after the other, each in a fresh process, and reports for
each: wall time, CPU time (user + system of pytest and everything it started), the load average
before and after (the machine is shared: a loaded machine stretches wall times, and the CPU
times tell how much work each suite did), the pytest summary line and the slowest tests. Writes
``bench/results/suite_<date>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The last commit before the in-process harness (tests/inprocess.py).
DEFAULT_BASE = "fd43cc0"


def export_tree(ref: str, where: Path) -> Path:
    """``git archive REF`` unpacked beside a ``shared`` link, with this tree's venv."""
    tree = where / "base"
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", ref], cwd=REPO, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    (tree / ".venv").symlink_to((REPO / ".venv").resolve())
    shared = (REPO.parent / "shared").resolve()
    if shared.exists():
        (where / "shared").symlink_to(shared)
    return tree


def run_suite(tree: Path, pytest_args: list[str], timeout: float, log: Path) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(tree)}
    command = [str(tree / ".venv" / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "--durations=50", *pytest_args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = os.getloadavg()
    started = time.monotonic()
    try:
        process = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
        output, returncode = process.stdout + process.stderr, process.returncode
    except subprocess.TimeoutExpired as exc:
        output, returncode = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or ""), None
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    log.write_text(output)
    summary = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    slowest = re.findall(r"^([\d.]+)s (setup|call|teardown)\s+(\S+)$", output, re.M)
    return {
        "tree": str(tree), "returncode": returncode, "wall_seconds": round(wall, 1),
        "cpu_seconds": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1),
        "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
        "summary": summary[-1] if summary else output[-2000:], "log": str(log),
        "failures": re.findall(r"^(?:FAILED|ERROR) (\S+)", output, re.M),
        "slowest": [{"seconds": float(s), "phase": p, "test": t} for s, p, t in slowest[:50]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=DEFAULT_BASE, help="the git ref to compare with")
    parser.add_argument("--pytest-args", default="", help="extra pytest arguments, e.g. \"-m 'not e2e'\"")
    parser.add_argument("--order", default="base,head", help="which suite runs first")
    parser.add_argument("--timeout", type=float, default=5400, help="seconds each suite may take")
    parser.add_argument("--logs", type=Path, default=Path(tempfile.gettempdir()),
                        help="where each suite's pytest output is written")
    options = parser.parse_args()
    pytest_args = shlex.split(options.pytest_args)
    results: dict = {"date": date.today().isoformat(), "base": options.base, "pytest_args": pytest_args,
                     "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as where:
        trees = {"base": export_tree(options.base, Path(where)), "head": REPO}
        for name in options.order.split(","):
            print(f"running the {name} suite ({trees[name]})...", file=sys.stderr, flush=True)
            log = options.logs / f"suite_{results['date']}_{name}.log"
            results[name] = run_suite(trees[name], pytest_args, options.timeout, log)
            print(json.dumps({k: v for k, v in results[name].items() if k != "slowest"}), file=sys.stderr, flush=True)
    base, head = results["base"], results["head"]
    results["wall_ratio"] = round(head["wall_seconds"] / base["wall_seconds"], 3)
    results["cpu_ratio"] = round(head["cpu_seconds"] / base["cpu_seconds"], 3)
    out = REPO / "bench" / "results" / f"suite_{results['date']}.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"base: {base['wall_seconds']} s wall, {base['cpu_seconds']} s CPU, {base['summary']}")
    print(f"head: {head['wall_seconds']} s wall, {head['cpu_seconds']} s CPU, {head['summary']}")
    print(f"head/base: wall {results['wall_ratio']}, CPU {results['cpu_ratio']} (written to {out})")


if __name__ == "__main__":
    main()
