#!/usr/bin/env bash
# Browser tests drive Debian's Chromium (Playwright's own download cannot work here).
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing chromium"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi
