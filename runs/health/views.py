"""/healthz for load balancers, /metrics in Prometheus' text format (prometheus_client).

Both are public (a load balancer and a scraper do not log in) and say nothing
of any project: counts and ages only. /healthz answers 200 while the web
process reaches Postgres (when it cannot, agentlab.unavailable answers 503
first). /metrics reads its figures at scrape time, from a registry of its
own, so every gunicorn process answers the same numbers from the database.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import redis
from django.conf import settings
from django.db import connection
from django.db.models import Count, Max
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from runs.core.models import Run
from runs.health.middleware import server_errors
from runs.health.sweeps import last_sweep_age_s
from tracing.store.models import Step

log = logging.getLogger(__name__)

# The window of the ingest rate (steps stored per second over it).
INGEST_WINDOW_S = 60
# At most this many of the newest steps are looked at: the rate reads true up
# to INGEST_SCAN_ROWS / INGEST_WINDOW_S (1,666 steps/s) and a scrape stays cheap.
INGEST_SCAN_ROWS = 100_000


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cur:
        cur.execute("SELECT 1")
    return JsonResponse({"status": "ok", "last_sweep_age_s": last_sweep_age_s()})


def _queue_depth(queue: str) -> float:
    try:
        client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2, socket_connect_timeout=1)
        return float(client.llen(queue))
    except redis.RedisError as exc:
        log.warning("metrics: queue depth unknown (%s)", exc)
        return float("nan")


class _Figures:
    """What a scrape reads, from Postgres and Redis."""

    def collect(self):
        now = timezone.now()
        by_status = GaugeMetricFamily("agentlab_runs", "Runs by status.", labels=["status"])
        counts = dict(Run.objects.values_list("status").annotate(n=Count("id")).order_by())
        for status in Run.Status.values:
            by_status.add_metric([status], counts.get(status, 0))
        yield by_status
        age = last_sweep_age_s(now)
        yield GaugeMetricFamily("agentlab_reconciler_last_sweep_age_seconds",
                                "Seconds since the reconciler's last sweep (NaN: never).",
                                value=float("nan") if age is None else age)
        depth = GaugeMetricFamily("agentlab_queue_depth", "Messages waiting in a Celery queue.", labels=["queue"])
        for queue in (settings.RUN_QUEUE, settings.RUN_CONTROL_QUEUE):
            depth.add_metric([queue], _queue_depth(queue))
        yield depth
        newest = Run.objects.filter(status=Run.Status.RUNNING).aggregate(at=Max("heartbeat_at"))["at"]
        yield GaugeMetricFamily("agentlab_worker_heartbeat_age_seconds",
                                "Seconds since the freshest heartbeat of a running run's worker (NaN: none running).",
                                value=float("nan") if newest is None else (now - newest).total_seconds())
        # Steps have no index on created_at: the newest INGEST_SCAN_ROWS by id (the primary key) are counted.
        newest_id = Step.objects.aggregate(top=Max("id"))["top"] or 0
        recent = Step.objects.filter(id__gt=newest_id - INGEST_SCAN_ROWS,
                                     created_at__gte=now - timedelta(seconds=INGEST_WINDOW_S)).count()
        yield GaugeMetricFamily("agentlab_steps_stored_per_second",
                                f"Steps stored per second over the last {INGEST_WINDOW_S} s.",
                                value=recent / INGEST_WINDOW_S)
        yield CounterMetricFamily("agentlab_http_5xx_responses", "Responses with a 5xx status this process sent.",
                                  value=float(server_errors()))


_REGISTRY = CollectorRegistry(auto_describe=False)
_REGISTRY.register(_Figures())


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    return HttpResponse(generate_latest(_REGISTRY), content_type=CONTENT_TYPE_LATEST)
