#!/usr/bin/env bash
# The lint and type checks CI runs: ruff's rule set and mypy's modules are in pyproject.toml.
# Both run, so one report shows every finding; the exit status is non-zero if either fails.
set -uo pipefail
cd "$(dirname "$0")/.."
bin="${VENV:-.venv}/bin"
status=0
"$bin/ruff" check harvester tests bench || status=1
"$bin/mypy" || status=1
exit "$status"
