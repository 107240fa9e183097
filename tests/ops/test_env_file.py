"""`.env` is read, with python-dotenv, by the settings, the Makefile and compose
alike (issue 16, item 2): a newcomer's DB_NAME in .env takes effect everywhere,
and the environment still wins over it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from tests.ops.settings_probe import settings_value
from tests.servers import ROOT

VENV = Path(sys.prefix)


@pytest.fixture
def newcomer_env(tmp_path):
    path = tmp_path / ".env"
    name = f"agentlab_newcomer_{uuid.uuid4().hex[:8]}"
    # As a newcomer writes it: copied from .env.example, DB_NAME changed, a comment, quotes.
    text = (ROOT / ".env.example").read_text().replace("DB_NAME=agentlab", f'DB_NAME="{name}"  # mine')
    path.write_text(text.replace("SECRET_KEY=\n", "SECRET_KEY=newcomer-secret-key-0123456789abcdefghijklmnop\n"))
    return path, name


def test_the_settings_read_db_name_from_env_file(newcomer_env):
    path, name = newcomer_env
    result = settings_value("settings.DATABASES['default']['NAME']", ENV_FILE=str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == repr(name)


def test_the_environment_wins_over_env_file(newcomer_env):
    path, _ = newcomer_env
    result = settings_value("settings.DATABASES['default']['NAME']", ENV_FILE=str(path), DB_NAME="from_the_shell")
    assert result.stdout.strip() == repr("from_the_shell")


def _make(*args: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in ("DB_NAME", "PORT", "MAKEFLAGS", "MAKELEVEL")}
    return subprocess.run(["make", "-s", f"VENV={VENV}", *args], cwd=ROOT, env={**full_env, **env},
                          capture_output=True, text=True, timeout=120)


def test_the_makefile_hands_env_file_to_its_scripts(newcomer_env):
    path, name = newcomer_env
    result = _make("config", f"ENV_FILE={path}")
    assert result.returncode == 0, result.stderr
    assert f"DB_NAME={name} " in result.stdout
    # A variable in the environment wins, as in the settings.
    assert "DB_NAME=mine " in _make("config", f"ENV_FILE={path}", DB_NAME="mine").stdout
    # No .env at all is fine: the defaults apply.
    assert "DB_NAME=agentlab " in _make("config", "ENV_FILE=/nonexistent/.env").stdout


def test_make_services_creates_the_database_named_in_env_file(newcomer_env):
    path, name = newcomer_env
    try:
        result = _make("services", f"ENV_FILE={path}")
        assert result.returncode == 0, result.stderr
        with psycopg.connect(host="127.0.0.1", user="postgres", dbname="postgres", autocommit=True) as conn:
            assert conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
    finally:
        with psycopg.connect(host="127.0.0.1", user="postgres", dbname="postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


def test_the_test_database_is_derived_from_db_name():
    """Two checkouts with their own DB_NAME on one Postgres (issue 30, item 3)."""
    name = "settings.DATABASES['default']['TEST']['NAME']"
    key = "probe-secret-key-0123456789abcdefghijklmnopqrstuv"

    def test_name(**env: str) -> str:
        result = settings_value(name, SECRET_KEY=key, **env)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    assert test_name(DB_NAME="checkout_two") == repr("test_checkout_two")
    assert test_name() == repr("test_agentlab")
    assert test_name(DB_NAME="x", DB_TEST_NAME="mine") == repr("mine")


def _names_read(*files: str) -> set[str]:
    text = "".join((ROOT / "agentlab" / f).read_text() for f in files)
    return set(re.findall(r'env_(?:str|int|float|bool|list)\(\s*"(\w+)"', text))


def test_env_example_names_every_setting():
    """.env.example says it lists every setting: set, or commented out with its default."""
    example = (ROOT / ".env.example").read_text()
    listed = set(re.findall(r"^#? ?(\w+)=", example, flags=re.M))
    assert _names_read("settings.py", "gunicorn.py") - listed == set()


def test_the_readme_names_the_test_database_setting():
    readme = (ROOT / "README.md").read_text()
    assert "DB_TEST_NAME" in readme
