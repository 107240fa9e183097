from django.urls import path

from runs.breaks import views

app_name = "breaks"

urlpatterns = [
    path("", views.breaks_page, name="page"),
    path("settings/", views.breaks_settings, name="settings"),
    path("patterns/<slug:pattern>/", views.pattern_set, name="pattern"),
    path("export.csv", views.export_csv, name="export_csv"),
    path("export.jsonl", views.export_jsonl, name="export_jsonl"),
    path("runs/<int:run_id>/label/", views.run_label, name="label"),
]
