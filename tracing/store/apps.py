"""The Django side of tracing, one app. Its label stays `tracing` (the
migrations, the tables and the API's URL namespace keep their names) while
the code lives in tracing/store beside the pure tracing/core."""

from django.apps import AppConfig


class TracingConfig(AppConfig):
    name = "tracing.store"
    label = "tracing"
