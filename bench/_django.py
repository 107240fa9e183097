"""Set up Django for a benchmark script run as `python bench/NAME.py`."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import _paths

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# Beside the checkout or one of its parents (a worktree under /work/wt/ finds /work/shared/eval).
EVAL_DIR = _paths.eval_dir()
SMOKE = _paths.SMOKE
sized = _paths.sized
# Settings refuse to start without a key when DEBUG is off; benches use scratch
# databases only (servers they start inherit it).
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-not-for-serving-0123456789abcdef")
# Django's test client, which the page benches drive, calls itself "testserver".
os.environ.setdefault("ALLOWED_HOSTS", "testserver,localhost,127.0.0.1,[::1]")


def bench_db(default: str) -> str:
    """The bench's scratch database: BENCH_DB, so two checkouts (or the smoke
    tests beside a measurement) never share one; else the bench's own name."""
    return os.environ.get("BENCH_DB", default)


def setup(db_name: str | None = None) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentlab.settings")
    if db_name:
        os.environ["DB_NAME"] = db_name
    import django

    django.setup()


def _admin_connection():
    import psycopg

    host = os.environ.get("DB_HOST", "127.0.0.1")
    user = os.environ.get("DB_USER", "postgres")
    return psycopg.connect(host=host, user=user, dbname="postgres", autocommit=True)


def _migrated_template() -> str:
    """A database migrated once per set of migrations, that scratch databases
    are copied from: migrating from nothing takes most of a small bench's time."""
    import hashlib
    import subprocess

    digest = hashlib.sha256()
    for path in sorted(ROOT.glob("*/migrations/*.py")) + sorted(ROOT.glob("*/*/migrations/*.py")):
        digest.update(path.read_bytes())
    template = f"bench_template_{digest.hexdigest()[:16]}"
    with _admin_connection() as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [template]).fetchone():
            return template
        building = f"{template}_{os.getpid()}"
        conn.execute(f'CREATE DATABASE "{building}"')
    env = {**os.environ, "DB_NAME": building, "DJANGO_SETTINGS_MODULE": "agentlab.settings"}
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "-v", "0"], env=env, check=True)
    with _admin_connection() as conn:
        try:
            conn.execute(f'ALTER DATABASE "{building}" RENAME TO "{template}"')
        except Exception:  # another bench built it meanwhile: keep theirs
            conn.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
    return template


def ensure_database(name: str) -> None:
    """Create (or reset) a scratch database for a benchmark, migrated."""
    template = _migrated_template()
    with _admin_connection() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    setup(name)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)  # nothing left to apply; checks the copy


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


@contextlib.contextmanager
def running_stack(db_name: str, concurrency: int) -> Iterator[str]:
    """A scratch database with the demo suite, the sim server and a Celery
    worker on a queue of its own; yields the queue name."""
    import uuid

    ensure_database(db_name)
    from django.conf import settings
    from django.core.management import call_command

    from tests.servers import start_sim_server, start_worker, stop

    call_command("loaddemo", verbosity=0)
    sim, sim_url = start_sim_server()
    queue = f"agentlab-bench-{uuid.uuid4().hex[:6]}"
    settings.RUN_QUEUE = queue
    worker = start_worker(db_name=db_name, queue=queue, env={"SIM_BASE_URL": sim_url}, concurrency=concurrency)
    try:
        yield queue
    finally:
        stop(worker)
        stop(sim)


def bench_project(user=None):
    """The benches' project ("bench"), with `user` as its admin when given."""
    from agentlab.projects.models import Membership, Project

    project = Project.objects.get_or_create(slug="bench", defaults={"name": "Bench"})[0]
    if user is not None:
        Membership.objects.get_or_create(user=user, project=project, defaults={"role": "admin"})
    return project
