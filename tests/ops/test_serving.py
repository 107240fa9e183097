"""Serving like production (issue 13, item 5): gunicorn + Django's Postgres pool.

The drill: 1,000 OTLP requests, each on a fresh TCP connection, 32 at a time,
against a real gunicorn process on the test database. Nothing may answer 500
(the old runserver + CONN_MAX_AGE=60 answered 507 of 1,000 with 500 once it held
all of Postgres' connections), and the web server may never hold more Postgres
connections than it is configured for: workers x threads (the pool's max_size
per worker), counted in pg_stat_activity by the application_name it runs under.
"""

from __future__ import annotations

import uuid

import pytest
from django.core.management import call_command
from django.db import connection

from runs.models import Run
from tests.ops.drill import fire, held_connections, start_gunicorn
from tests.servers import stop

pytestmark = [pytest.mark.django_db(transaction=True)]

WORKERS, THREADS = 2, 4


@pytest.fixture
def token(django_user_model, capsys):
    from tests.projects import project_of

    project_of(django_user_model.objects.create_user("drill", password="pw"))
    capsys.readouterr()
    call_command("apitoken", "create", "--user", "drill", "--name", "drill")  # its only project
    return capsys.readouterr().out.strip()


def test_a_thousand_fresh_connections_never_exceed_the_pool(token):
    db_name = connection.settings_dict["NAME"]
    app_name = f"agentlab-drill-{uuid.uuid4().hex[:8]}"
    proc, port = start_gunicorn(db_name=db_name, application_name=app_name, workers=WORKERS, threads=THREADS)
    try:
        result = fire(port, token, requests=1000, concurrency=32, db_name=db_name, application_name=app_name)
        assert result.errors == []
        assert result.statuses == {200: 1000}
        assert 0 < result.max_connections <= WORKERS * THREADS
        # The pool keeps what it opened, and no more, once the load is over.
        assert held_connections(db_name, app_name) <= WORKERS * THREADS
    finally:
        stop(proc)
    assert Run.objects.filter(source="otlp").count() == 1000
    assert held_connections(db_name, app_name) == 0
