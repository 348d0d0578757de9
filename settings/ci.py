"""CI: the packaged model offline and a throwaway local Qdrant."""

import os

from harvester.settings import *  # noqa: F403

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HARVESTER_QDRANT_PATH = os.environ.get("HARVESTER_QDRANT_PATH", ".harvester/ci-qdrant")
# The test bootstrap installs Debian's Chromium (scripts/bootstrap.sh --test).
HARVESTER_BROWSER_PATH = os.environ.get("HARVESTER_BROWSER_PATH", "/usr/bin/chromium")
