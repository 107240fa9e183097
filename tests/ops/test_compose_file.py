"""docker-compose.yml, checked without Docker (issue 16, item 0): this machine's
docker client has no compose plugin, so the file is read with PyYAML and each
service's command, environment and .env handling are checked against the code.
(tests/test_setup_files.py also runs `docker compose config` where it can.)"""

from __future__ import annotations

import importlib.util
import re
import shlex
import tomllib

import pytest
import yaml
from django.core.management import get_commands
from dotenv import dotenv_values

from tests.servers import ROOT

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
APP = [name for name, svc in SERVICES.items() if svc.get("build") == "."]
EXAMPLE = dotenv_values(ROOT / ".env.example")
# ${NAME}, ${NAME:-default}, ${NAME:?error} — compose's interpolation, enough of it to check the file.
VARIABLE = re.compile(r"\$\{(\w+)(?:(:?[-?])([^}]*))?\}")


def interpolate(value, env: dict[str, str]):
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def one(match: re.Match) -> str:
        name, op, arg = match.groups()
        if env.get(name):
            return env[name]
        if op and op.endswith("?"):
            raise ValueError(arg)
        return arg or ""

    return VARIABLE.sub(one, value.replace("$$", "\0")).replace("\0", "$")


def _settings_names() -> set[str]:
    """Every variable the settings and gunicorn's configuration read."""
    text = "".join((ROOT / "agentlab" / f).read_text() for f in ("settings.py", "gunicorn.py"))
    return set(re.findall(r'env_(?:str|int|float|bool|list)\(\s*"(\w+)"', text))


def test_app_services_read_env_file_and_require_a_secret_key():
    for name in APP:
        svc = SERVICES[name]
        assert {"path": ".env", "required": False} in svc["env_file"], name
        env = svc["environment"]
        assert env["SECRET_KEY"].startswith("${SECRET_KEY:?"), name
        assert "DEBUG" not in env or str(env["DEBUG"]).lower() in ("false", "0"), name
        assert env.get("ALLOWED_HOSTS", "") != "*", name
    with pytest.raises(ValueError, match="set SECRET_KEY in .env"):
        interpolate(SERVICES["web"]["environment"], {})


def test_a_newcomers_db_name_in_env_file_reaches_postgres_and_the_apps():
    env = {"SECRET_KEY": "x" * 50, "DB_NAME": "newcomer"}
    assert interpolate(SERVICES["postgres"]["environment"], env)["POSTGRES_DB"] == "newcomer"
    for name in APP:
        assert interpolate(SERVICES[name]["environment"], env)["DB_NAME"] == "newcomer", name
    assert interpolate(SERVICES["postgres"]["environment"], {})["POSTGRES_DB"] == "agentlab"


def test_every_variable_compose_sets_or_reads_is_known():
    known = _settings_names() | {"PORT", "HOST"}  # llama_cpp.server reads PORT / HOST
    text = (ROOT / "docker-compose.yml").read_text()
    for name in VARIABLE.findall(text):
        assert name[0] in EXAMPLE, f"${{{name[0]}}} is not in .env.example"
    for service in APP:
        for key in SERVICES[service]["environment"]:
            assert key in known, f"{service} sets {key}, which nothing reads"


def _words(service: str) -> list[str]:
    command = interpolate(SERVICES[service]["command"], {"SECRET_KEY": "x" * 50})
    if command[:2] == ["sh", "-c"]:
        return shlex.split(command[2].replace("&&", " ; "))
    return command


def _python_modules(words: list[str]) -> list[str]:
    modules = [words[i + 1] for i, w in enumerate(words[:-1]) if w == "-m"]
    modules += [w.split(":", 1)[1] for w in words if w.startswith("python:")]
    if "gunicorn" in words:
        modules.append(words[-1].split(":")[0])
    if words and words[0] == "celery":
        modules.append(words[words.index("-A") + 1] + ".celery")
    return modules


def test_every_command_runs_code_that_exists():
    local_extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["local"]
    commands = set(get_commands())
    for service in APP:
        words = _words(service)
        for module in _python_modules(words):
            if module.startswith("llama_cpp"):
                # Built into the image from the `local` extra (the Dockerfile installs it).
                assert any(req.startswith("llama-cpp-python") for req in local_extra)
                continue
            assert importlib.util.find_spec(module) is not None, f"{service}: no module {module}"
        for i, word in enumerate(words[:-1]):
            if word == "manage.py":
                assert words[i + 1] in commands, f"{service}: no management command {words[i + 1]}"
    assert "runserver" not in (ROOT / "docker-compose.yml").read_text()
    assert "gunicorn" in _words("web")
    assert "-Q" in _words("worker")
    # The reconciler: beat in a worker of its own, on the control queue the settings name.
    control = _words("control")
    assert "--beat" in control and control[control.index("-Q") + 1] == "agentlab-runs-control"


def test_dependencies_and_ports():
    for name, svc in SERVICES.items():
        for dep in svc.get("depends_on") or {}:
            assert dep in SERVICES, f"{name} depends on unknown {dep}"
    web_ports = interpolate(SERVICES["web"]["ports"], {})
    assert web_ports == ["127.0.0.1:8000:8000"]  # published on the host's loopback only
    assert interpolate(SERVICES["web"]["environment"], {"SECRET_KEY": "x"})["WEB_BIND"] == "0.0.0.0:8000"


def test_the_image_collects_static_files_and_keeps_secrets_out():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "collectstatic" in dockerfile
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".env", ".venv", "var"} <= set(ignored)
