from __future__ import annotations

from django.urls import path

from runs.deletion import views

app_name = "deletion"

urlpatterns = [
    path("", views.deletion_records, name="records"),
    path("project/", views.project_delete_view, name="project"),
    path("run/<int:run_id>/", views.run_delete, name="run"),
]
