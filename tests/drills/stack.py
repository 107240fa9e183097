"""A private Postgres cluster, a private Redis and real Celery workers, all
from their binaries in a temp dir (no containers), for the fault drills: they
are killed, stopped and restarted, which the shared services must never be."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from tests.servers import ROOT, free_port


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if found:
        return found[-1]
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} not found (install the postgresql server package)")
    return path


def _as_postgres(cmd: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root: drop to the postgres user.
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def wait_until(check, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 (what failed is reported on timeout)
            last = exc
        time.sleep(interval)
    raise TimeoutError(f"{what} not within {timeout} s (last error: {last})")


class PrivatePostgres:
    def __init__(self, base: Path) -> None:
        self.dir = base / "pg"
        self.port = free_port()
        self.dir.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(base, "postgres")
            shutil.chown(self.dir, "postgres")
        subprocess.run(_as_postgres([_pg_bin("initdb"), "-D", str(self.dir / "data"), "-U", "postgres",
                                     "--auth=trust", "-E", "UTF8", "--no-sync"]),
                       check=True, stdout=subprocess.DEVNULL)

    def start(self) -> None:
        opts = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c full_page_writes=off -c max_connections=200")
        subprocess.run(_as_postgres([_pg_bin("pg_ctl"), "-D", str(self.dir / "data"), "-l", str(self.dir / "log"),
                                     "-o", opts, "-w", "start"]), check=True, stdout=subprocess.DEVNULL)

    def stop(self) -> None:
        # Fast: every session is cut, as when the database host goes away.
        subprocess.run(_as_postgres([_pg_bin("pg_ctl"), "-D", str(self.dir / "data"), "-m", "fast", "-w", "stop"]),
                       check=True, stdout=subprocess.DEVNULL)

    def connect(self, dbname: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(host="127.0.0.1", port=self.port, user="postgres", dbname=dbname, autocommit=True,
                               connect_timeout=3)


class PrivateRedis:
    def __init__(self, base: Path) -> None:
        self.dir = base / "redis"
        self.dir.mkdir()
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        # Keeps nothing across a restart, as the compose Redis.
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(self.dir)], stdout=subprocess.DEVNULL)
        import redis

        wait_until(lambda: redis.Redis(port=self.port).ping(), 10, "redis up")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)


@dataclass
class Workers:
    """Celery worker processes pointed at the private services."""

    env: dict[str, str]
    procs: list[subprocess.Popen] = field(default_factory=list)

    def start(self, *args: str, name: str) -> subprocess.Popen:
        log = open(Path(self.env["DRILL_DIR"]) / f"{name}.log", "ab")  # noqa: SIM115 (the process keeps it)
        proc = subprocess.Popen([sys.executable, "-m", "celery", "-A", "agentlab", "worker", "--loglevel", "WARNING",
                                 "--without-mingle", "--without-gossip", "-n", f"{name}-{len(self.procs)}@drill",
                                 *args],
                                cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def run_worker(self, concurrency: int = 2) -> subprocess.Popen:
        return self.start("-Q", self.env["RUN_QUEUE"], "-c", str(concurrency), name="runs")

    def control_worker(self) -> subprocess.Popen:
        # Beat embedded: the reconciler's schedule, on the control queue.
        return self.start("-Q", self.env["RUN_CONTROL_QUEUE"], "-c", "1", "-B", "-s",
                          str(Path(self.env["DRILL_DIR"]) / f"beat-{len(self.procs)}"), name="control")

    @staticmethod
    def kill9(proc: subprocess.Popen) -> None:
        """The whole worker, main process and pool, at once."""
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
