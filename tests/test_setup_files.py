"""The set-up files stay true: compose services, README commands, CI."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_compose_has_the_services_the_readme_starts():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert set(compose["services"]) == {"postgres", "redis", "sim", "localmodel", "web", "worker", "control"}
    readme = (ROOT / "README.md").read_text()
    for service in compose["services"]:
        assert f"`{service}`" in readme


def _compose_command() -> list[str] | None:
    """docker-compose, or `docker compose` when the client has the plugin."""
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        # A client without the plugin answers `docker compose version` with a
        # usage error (it parses "compose" as an unknown flag's argument).
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=30)
        if probe.returncode == 0:
            return ["docker", "compose"]
    return None


def test_the_compose_file_is_accepted_by_docker():
    cmd = _compose_command()
    if cmd is None:
        pytest.skip("neither docker-compose nor the docker compose plugin is installed "
                    "(tests/ops/test_compose_file.py checks the file without them)")
    # SECRET_KEY is required (${SECRET_KEY:?...}): a newcomer sets it in .env.
    env = {**os.environ, "SECRET_KEY": "compose-config-check-key-0123456789abcdefghij"}
    result = subprocess.run([*cmd, "config", "-q"], cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / "README.md").read_text()
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_wherever_chromium_is_installed_a_cjk_font_is_too():
    """Chinese in browser tests and screenshots is text, not empty boxes (issue 30, item 14)."""
    installers = [p for p in ROOT.rglob("*") if p.is_file() and p.suffix in ("", ".sh", ".yml", ".yaml")
                  and ".venv" not in p.parts and ".git" not in p.parts and p.stat().st_size < 200_000
                  and "chromium" in p.read_text(errors="ignore") and "apt-get install" in p.read_text(errors="ignore")]
    assert ROOT / "scripts" / "chromium.sh" in installers
    for path in installers:
        assert "fonts-noto-cjk" in path.read_text(), path
    # Chromium present but no CJK font (this script's check) still installs the font.
    assert "fc-list :lang=zh" in (ROOT / "scripts" / "chromium.sh").read_text()
