"""Run Django's settings in a fresh interpreter with a given environment (and
no .env unless the test gives one), the way manage.py, gunicorn or Celery would."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.servers import ROOT

# Variables the settings read that a developer's shell or .env could set.
_SCRUB = ("SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "DB_NAME", "DB_TEST_NAME", "HTTPS", "DB_POOL_MAX_SIZE", "DB_CONN_MAX_AGE",
          "ENV_FILE", "DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE")


def clean_env(**env: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    return {**base, "ENV_FILE": os.devnull, **env}


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean_env(**env), capture_output=True,
                          text=True, timeout=120)


def settings_value(expr: str, **env: str) -> subprocess.CompletedProcess:
    code = ("import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'agentlab.settings'); "
            f"django.setup(); from django.conf import settings; print(repr({expr}))")
    return run_python(code, **env)


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=clean_env(**env), capture_output=True,
                          text=True, timeout=120)
