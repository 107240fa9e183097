"""Set up Django for a benchmark script run as `python bench/NAME.py`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVAL_DIR = ROOT.parent / "shared" / "eval"


def setup(db_name: str | None = None) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentlab.settings")
    if db_name:
        os.environ["DB_NAME"] = db_name
    import django

    django.setup()


def ensure_database(name: str) -> None:
    """Create (or reset) a scratch database for a benchmark and migrate it."""
    import psycopg

    host = os.environ.get("DB_HOST", "127.0.0.1")
    user = os.environ.get("DB_USER", "postgres")
    with psycopg.connect(host=host, user=user, dbname="postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    setup(name)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]
