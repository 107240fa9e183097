"""Headless Debian Chromium for the browser tests: one path, one set of
flags, one launcher (Playwright's own browsers are not installed here)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# No sandbox (root in a container), and none of the background traffic a
# first run starts: the machine has no network beyond localhost.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


@contextmanager
def launched() -> Iterator:
    """A launched headless browser, closed on the way out."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()
