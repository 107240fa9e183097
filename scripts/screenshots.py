"""Screenshots of the running app (make demo) for the README and for review.

    .venv/bin/python scripts/screenshots.py [--lang=zh-hans] [--width=1440] [BASE_URL] [OUT_DIR] [PATH ...]

--lang picks the interface's language with the header's switch (as a user
does; the choice is then the demo user's), and names the files after it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def main() -> None:
    options = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
    argv = [a for a in sys.argv[1:] if not a.startswith("--")]
    base = argv[0] if argv else "http://127.0.0.1:8000"
    out = Path(argv[1] if len(argv) > 1 else "docs")
    paths = argv[2:] or ["/runs/", "/runs/1/", "/runs/new/"]
    lang = options.get("lang", "")
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": int(options.get("width", 1280)), "height": 900})
        page.goto(f"{base}/accounts/login/")
        page.fill("#id_username", "demo")
        page.fill("#id_password", "demo")
        page.click("button[type=submit]")
        if lang:
            with page.expect_navigation():
                page.select_option("select[name=language]", lang)
        for path in paths:
            page.goto(f"{base}{path}")
            page.wait_for_timeout(2500)  # charts drawn, panes loaded
            name = path.strip("/").replace("/", "-").replace("?", "_").replace("=", "-").replace("&", "_") or "home"
            name = f"{name.split('_')[0].strip('-')}-{lang}" if lang else name
            page.screenshot(path=str(out / f"{name}.png"), full_page=False)
            print(out / f"{name}.png")
        browser.close()


if __name__ == "__main__":
    main()
