"""URLs of the ingestion API, OTLP/HTTP and the API token settings page."""

from __future__ import annotations

from django.urls import path

from tracing.store import api_views

app_name = "tracing"

urlpatterns = [
    path("v1/traces", api_views.otlp_traces, name="otlp_traces"),
    path("v1/logs", api_views.otlp_logs, name="otlp_logs"),
    path("api/openapi.json", api_views.openapi, name="openapi"),
    path("api/runs", api_views.runs_create, name="api_runs"),
    path("api/runs/<int:run_id>", api_views.run_show, name="api_run"),
    path("api/runs/<int:run_id>/steps", api_views.run_steps, name="api_run_steps"),
    path("api/runs/<int:run_id>/finish", api_views.run_finish, name="api_run_finish"),
    path("api/runs/<int:run_id>/labels", api_views.run_labels, name="api_run_labels"),
    path("settings/tokens/", api_views.token_list, name="tokens"),
    path("settings/tokens/<int:token_id>/revoke/", api_views.token_revoke_view, name="token_revoke"),
]
