from __future__ import annotations

from django.urls import path

from runs.health import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.metrics, name="metrics"),
]
