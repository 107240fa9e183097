"""Screenshots of the running app (make demo) for the README and for review.

    .venv/bin/python scripts/screenshots.py [BASE_URL] [OUT_DIR] [PATH ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def main() -> None:
    base = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"
    out = Path(sys.argv[2] if len(sys.argv) > 2 else "docs")
    paths = sys.argv[3:] or ["/runs/", "/runs/1/", "/runs/new/"]
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{base}/accounts/login/")
        page.fill("#id_username", "demo")
        page.fill("#id_password", "demo")
        page.click("button[type=submit]")
        for path in paths:
            page.goto(f"{base}{path}")
            page.wait_for_timeout(800)
            name = path.strip("/").replace("/", "-").replace("?", "_").replace("=", "-").replace("&", "_") or "home"
            page.screenshot(path=str(out / f"{name}.png"), full_page=False)
            print(out / f"{name}.png")
        browser.close()


if __name__ == "__main__":
    main()
