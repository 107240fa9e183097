"""The set-up files stay true: compose services, README commands, CI."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_compose_has_the_services_the_readme_starts():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert set(compose["services"]) == {"postgres", "redis", "sim", "localmodel", "web", "worker"}
    readme = (ROOT / "README.md").read_text()
    for service in compose["services"]:
        assert f"`{service}`" in readme


@pytest.mark.skipif(not (shutil.which("docker-compose") or shutil.which("docker")), reason="no docker client")
def test_the_compose_file_is_accepted_by_docker():
    cmd = ["docker-compose", "config", "-q"] if shutil.which("docker-compose") else ["docker", "compose", "config", "-q"]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    if "unknown command" in result.stderr or "is not a docker command" in result.stderr:
        pytest.skip("the docker client has no compose plugin")
    assert result.returncode == 0, result.stderr


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / "README.md").read_text()
    assert "make test" in (ROOT / ".ci" / "run").read_text()
