"""The private stack the drills break: one Postgres cluster and one Redis per
session (migrated and loaded once), workers per drill on queues of their own."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.drills.stack import PrivatePostgres, PrivateRedis, Workers
from tests.servers import ROOT

DB_NAME = "agentlab_drill"


@pytest.fixture(scope="session")
def private_stack(sim_url):
    with tempfile.TemporaryDirectory(prefix="agentlab-drill-") as tmp:
        base = Path(tmp)
        pg = PrivatePostgres(base)
        pg.start()
        redis = PrivateRedis(base)
        redis.start()
        with pg.connect() as conn:
            conn.execute(f"CREATE DATABASE {DB_NAME}")
        env = {**os.environ, "DB_HOST": "127.0.0.1", "DB_PORT": str(pg.port), "DB_NAME": DB_NAME,
               "REDIS_URL": redis.url, "SIM_BASE_URL": sim_url, "DRILL_DIR": str(base),
               "DB_APPLICATION_NAME": "agentlab-drill", "DJANGO_SETTINGS_MODULE": "agentlab.settings"}
        env.pop("DB_POOL_MAX_SIZE", None)
        cli(env, "setup")
        try:
            yield pg, redis, env
        finally:
            if redis.proc is not None and redis.proc.poll() is None:
                redis.kill()
            with contextlib.suppress(subprocess.CalledProcessError):  # a drill left it stopped
                pg.stop()


def cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "tests.drills.cli", *args], cwd=ROOT, env=env, check=True,
                          capture_output=True, text=True, timeout=120)
    return done.stdout


@pytest.fixture
def drill(private_stack):
    """The private stack, with queues of this drill's own and its workers stopped after it."""
    pg, redis, env = private_stack
    queue = f"drill-{uuid.uuid4().hex[:8]}"
    env = {**env, "RUN_QUEUE": queue, "RUN_CONTROL_QUEUE": f"{queue}-control"}
    workers = Workers(env)
    yield pg, redis, env, workers
    workers.stop_all()
