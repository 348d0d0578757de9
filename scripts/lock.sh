#!/usr/bin/env bash
# Write constraints.txt: every package a fresh test install resolves today, at its version.
# scripts/bootstrap.sh installs with it, so CI and a new checkout get the set the suite last
# passed on, and a dependency's new release comes in by a commit that runs this, not by surprise.
#   scripts/lock.sh    then run the suite on the new set, and commit constraints.txt with it
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$(mktemp -d)/venv"
trap 'rm -rf "$(dirname "$venv")"' EXIT
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q torch==2.13.0
"$venv/bin/python" -m pip install -q -e '.[dev]'
{
  echo "# Written by scripts/lock.sh from a fresh '.[dev]' install; bootstrap.sh installs with it."
  echo "# torch without its local label (+cpu): the pin holds whichever build bootstrap.sh installed."
  "$venv/bin/python" -m pip freeze --exclude-editable | grep -viE '^harvester[= @]' | sed -E 's/^(torch==[^+]+)\+.*/\1/'
} > constraints.txt
echo "constraints.txt: $(grep -vc '^#' constraints.txt) packages"
