"""Which browser renders pages, and how it is launched (Scrapy-free).

The browser is Chromium: ``HARVESTER_BROWSER_PATH`` when set, else a system Chromium
(Debian's ``/usr/bin/chromium``, Ubuntu's ``chromium-browser``, ``google-chrome``), else the one
``playwright install chromium`` downloaded. Playwright's own download is tried last because
Debian's package gets security updates from apt.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import shlex
import shutil
from pathlib import Path

# The longest a page may take in the browser, in milliseconds: HARVESTER_RENDER_TIMEOUT_MS's default.
RENDER_TIMEOUT_MS = 30000

SYSTEM_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

NO_BROWSER = (
    "no browser to render JavaScript pages with: install Playwright's Chromium "
    "(`pip install -e .[js] && playwright install chromium`) or point HARVESTER_BROWSER_PATH at a "
    "system Chromium (Debian: `apt-get install chromium`, then HARVESTER_BROWSER_PATH=/usr/bin/chromium)"
)
NO_EXTRA = (
    "JavaScript rendering needs scrapy-playwright: `pip install -e .[js]`, then a browser "
    "(`playwright install chromium`, or a system Chromium in HARVESTER_BROWSER_PATH)"
)


class NoBrowser(RuntimeError):
    """Rendering was asked for and no browser (or no scrapy-playwright) is there."""


def playwright_installed() -> bool:
    return importlib.util.find_spec("scrapy_playwright") is not None


def find_browser(configured: str | None = None) -> str | None:
    """The Chromium executable to launch; "" when Playwright's own download will be used; None
    when there is none. A configured path that does not exist is an error, not a fallback."""
    if configured:
        path = shutil.which(configured) or (configured if os.access(configured, os.X_OK) else None)
        if path is None:
            raise NoBrowser(f"HARVESTER_BROWSER_PATH={configured!r} is not an executable file; {NO_BROWSER}")
        return path
    for name in SYSTEM_BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    if _playwright_chromium():
        return ""
    return None


def _playwright_chromium() -> bool:
    root = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or str(Path.home() / ".cache" / "ms-playwright")
    return bool(glob.glob(os.path.join(root, "chromium*", "chrome-linux*", "chrome")) or
                glob.glob(os.path.join(root, "chromium_headless_shell*", "chrome-linux*", "headless_shell")))


def launch_options(executable: str, *, proxy: str | None = None, extra_args: list[str] | tuple[str, ...] = (),
                   timeout_ms: int = RENDER_TIMEOUT_MS) -> dict[str, object]:
    """``PLAYWRIGHT_LAUNCH_OPTIONS`` for a headless Chromium.

    ``--no-sandbox`` only as root: Chromium refuses to start a sandbox as root, and elsewhere the
    sandbox is wanted. With ``proxy`` every connection goes through it, loopback included
    (``<-loopback>``: Chromium otherwise connects to localhost directly, past the guard).
    """
    args = ["--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update",
            "--no-first-run", "--disable-sync", "--metrics-recording-only", "--disable-default-apps",
            "--disable-extensions", "--disable-domain-reliability", "--disable-client-side-phishing-detection",
            "--no-pings", "--disable-breakpad",
            ("--disable-features=Translate,MediaRouter,OptimizationHints,OptimizationGuideModelDownloading,"
            "OptimizationHintsFetching,InterestFeedContentSuggestions,AutofillServerCommunication,"
            "CertificateTransparencyComponentUpdater")]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")
    options: dict[str, object] = {"headless": True, "timeout": timeout_ms}
    if executable:
        options["executable_path"] = executable
    if proxy:
        options["proxy"] = {"server": proxy, "bypass": ",".join(BROWSER_SERVICES)}
        args.append(proxy_bypass_arg())
    if not any(a.startswith("--host-resolver-rules") for a in extra_args):
        args.append("--host-resolver-rules=" + ", ".join(f"MAP {host} ~NOTFOUND" for host in BROWSER_SERVICES))
    options["args"] = [*args, *extra_args]
    return options


# Chromium's own services, which it calls even headless and with the flags above (seen in
# tests: sign-in, component and extension updates). Never a crawl's business: they bypass the
# proxy and resolve to nothing, so they fail inside Chromium without a DNS query or a connection.
BROWSER_SERVICES = (
    "accounts.google.com", "update.googleapis.com", "clients1.google.com", "clients2.google.com",
    "clientservices.googleapis.com", "safebrowsing.googleapis.com", "optimizationguide-pa.googleapis.com",
    "content-autofill.googleapis.com", "redirector.gvt1.com", "edgedl.me.gvt1.com", "android.clients.google.com",
)


def proxy_bypass_arg() -> str:
    """Everything through the proxy, loopback included (``<-loopback>``: Chromium otherwise
    connects to localhost directly, past the guard), except Chromium's own services. Playwright
    writes the same rule from the ``proxy`` option; stated here so no Playwright version can drop it."""
    return "--proxy-bypass-list=" + ";".join([*BROWSER_SERVICES, "<-loopback>"])


def browser_args(value: object) -> list[str]:
    """``HARVESTER_BROWSER_ARGS``: a list, a JSON list, or a shell-quoted string (a Chromium
    argument may hold commas, so Scrapy's comma-split ``getlist`` cannot read it)."""
    if not value:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    text = str(value).strip()
    if text.startswith("["):
        return [str(v) for v in json.loads(text)]
    return shlex.split(text)
