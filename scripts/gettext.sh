#!/usr/bin/env bash
# The Chinese interface is compiled from locale/*/LC_MESSAGES/django.po by Django's
# compilemessages, which runs GNU gettext's msgfmt: install Debian's gettext when
# msgfmt is missing, then compile (make setup, make demo; the tests compile too).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v msgfmt >/dev/null 2>&1; then
  echo "installing gettext (msgfmt, for the translations)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gettext >/dev/null
fi
PY=${PY:-.venv/bin/python}
# compilemessages only reads the catalogues, but the settings refuse to load
# without a key: this one exists only for this step (as in the Dockerfile).
SECRET_KEY=${SECRET_KEY:-compilemessages-only-key-never-served-0123456789} \
  "$PY" manage.py compilemessages --ignore '.venv' --ignore 'node_modules' -v 0
