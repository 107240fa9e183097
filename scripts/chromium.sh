#!/usr/bin/env bash
# Browser tests drive Debian's Chromium (Playwright's own download cannot work here),
# with a CJK font: without one, Chinese (the demo's tasks, search) renders as empty
# boxes in tests and screenshots.
set -euo pipefail
PACKAGES=(chromium chromium-driver fonts-noto-cjk)
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium chromium-driver)
fc-list :lang=zh 2>/dev/null | grep -q . || missing+=(fonts-noto-cjk)
if ((${#missing[@]})); then
  echo "installing ${missing[*]} (of ${PACKAGES[*]})"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
