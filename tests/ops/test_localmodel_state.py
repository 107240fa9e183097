"""The local model's state as the New-run form shows it (issue 16, item 1):
agentlab/localmodel.py reads the file `make demo` writes, or asks the server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from agentlab import localmodel
from agentlab.localmodel import State, build_progress, read_state, write_state

pytestmark = pytest.mark.django_db


@pytest.fixture
def state_file(tmp_path, settings):
    settings.LOCAL_MODEL_STATE_FILE = tmp_path / "run" / "localmodel.json"
    settings.LOCAL_MODEL_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
    return settings.LOCAL_MODEL_STATE_FILE


def test_progress_is_read_from_cmake_and_ninja_lines():
    assert build_progress("") == ""
    assert build_progress("  [ 12%] Building C object ggml.c.o\n  [ 40%] Linking\n") == "40%"
    assert build_progress("[37/152] Building CXX object a.o\n[38/152] Building CXX object b.o\n") == \
        "25% (38/152 files compiled)"
    # The latest marker wins, whichever kind.
    assert build_progress("[ 90%] x\n[10/100] y\n") == "10% (10/100 files compiled)"


def test_a_state_whose_writer_is_gone_is_ignored(tmp_path):
    path = tmp_path / "s.json"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    write_state(path, State(localmodel.BUILDING, pid=dead.pid))
    assert read_state(path) is None
    write_state(path, State(localmodel.BUILDING, pid=os.getpid()))
    assert read_state(path).state == "building"
    path.write_text("{not json")
    assert read_state(path) is None


def test_the_new_run_form_says_building_with_progress_and_polls(auth_client, state_file):
    write_state(state_file, State(localmodel.BUILDING, progress="42% (64/152 files compiled)",
                                  log="var/log/localmodel-build.log", since=time.time() - 150, pid=os.getpid()))
    page = auth_client.get("/runs/new/").content.decode()
    assert "local model: <strong>building</strong>" in page
    assert "42% (64/152 files compiled), 2 min 30 s so far" in page
    assert 'hx-get="/local-model/status/" hx-trigger="every 5s"' in page
    assert "var/log/localmodel-build.log" in page


def test_a_settled_state_stops_the_poll(auth_client, state_file):
    write_state(state_file, State(localmodel.FAILED, "build failed: ERROR: No matching distribution for llama-cpp",
                                  pid=os.getpid()))
    fragment = auth_client.get("/local-model/status/").content.decode()
    assert "local model: <strong>failed</strong>" in fragment
    assert "(build failed: ERROR: No matching distribution for llama-cpp)" in fragment
    assert "hx-trigger" not in fragment
    write_state(state_file, State(localmodel.READY, "Gemma 3 270M on :8766", pid=os.getpid()))
    assert "local model: <strong>ready</strong>" in auth_client.get("/local-model/status/").content.decode()


def test_without_a_demo_the_server_is_asked(auth_client, state_file):
    fragment = auth_client.get("/local-model/status/").content.decode()
    assert "local model: <strong>not running</strong>" in fragment
    assert "no server answers at http://127.0.0.1:9/v1" in fragment


def test_the_status_fragment_needs_a_login(client, state_file):
    assert client.get("/local-model/status/").status_code == 302


def test_the_new_run_form_refuses_local_while_it_builds_and_takes_it_when_ready(auth_client, state_file,
                                                                               monkeypatch):
    """Not a run that ends `error` ("cannot reach the model endpoint") but the
    form saying so (issue 30, item 2)."""
    from runs.core.models import Run

    monkeypatch.setattr("runs.launch.tasks.execute_run.apply_async", lambda *a, **kw: None)
    post = {"prompt": "What is 2 + 2?", "provider": "local", "mode": "text", "temperature": 0.5, "max_steps": 3,
            "max_tokens": 1000, "reruns": 1}
    write_state(state_file, State(localmodel.BUILDING, progress="38% (58/152 files compiled)", pid=os.getpid()))
    response = auth_client.post("/runs/new/", post)
    assert response.status_code == 400
    assert "still building, 38% — use sim meanwhile" in response.content.decode()
    assert not Run.objects.exists()
    write_state(state_file, State(localmodel.STARTING, pid=os.getpid()))
    assert "still starting — use sim meanwhile" in auth_client.post("/runs/new/", post).content.decode()
    write_state(state_file, State(localmodel.READY, pid=os.getpid()))
    answer = auth_client.post("/runs/new/", post)
    assert answer.status_code == 302, re.findall(r"class=\"error\">([^<]*)", answer.content.decode())
    assert Run.objects.get().provider == "local"
