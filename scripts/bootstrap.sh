#!/usr/bin/env bash
# Set up Harvester from nothing: a venv in .venv with upgraded pip, the CPU build of torch first
# (else pip pulls gigabytes of CUDA wheels), then Harvester and its dependencies.
#   scripts/bootstrap.sh          what a crawl needs, with Debian's Chromium for JavaScript pages
#   scripts/bootstrap.sh --test   also the test tools and the Debian packages the tests crawl
set -euo pipefail
cd "$(dirname "$0")/.."

with_tests=0
[ "${1:-}" = "--test" ] && with_tests=1

sudo_cmd=""; [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
apt_install() {
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "$@" >/dev/null
}

if [ "$with_tests" = 1 ]; then
  # Real documentation sites the end-to-end tests serve on loopback (Git's, Octave's and Doxygen's
  # manuals are AsciiDoc, Texinfo and Doxygen output), the Redis server the cluster tests start on
  # loopback, and the browser the rendering tests drive.
  packages="python-flask-doc python-requests-doc python-scrapy-doc git-doc octave-doc doxygen-doc"
  packages="$packages redis-server chromium"
  dpkg -s $packages >/dev/null 2>&1 || apt_install $packages
  # JUnit's API (Javadoc), GTK's reference (gtk-doc), MkDocs' own docs and Apache's manual, without
  # the JDK, the server and the other references they recommend.
  docs="junit4-doc libgtk-3-doc mkdocs-doc apache2-doc"
  dpkg -s $docs >/dev/null 2>&1 || apt_install --no-install-recommends $docs
elif ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  # The browser for pages that need JavaScript (render mode auto). A crawl runs without it:
  # such pages then keep what plain HTTP gave, with a warning.
  apt_install chromium || echo "Could not install Debian's chromium: JavaScript pages will not be rendered" >&2
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
# A fresh venv's pip 23 skips lxml[html_clean], which trafilatura needs.
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q torch==2.13.0
# constraints.txt holds the versions the suite last passed on (scripts/lock.sh writes it).
if [ "$with_tests" = 1 ]; then
  .venv/bin/python -m pip install -q -c constraints.txt -e '.[dev]'
else
  .venv/bin/python -m pip install -q -c constraints.txt -e '.[js,mcp]'
fi
echo "Harvester is installed in .venv"
