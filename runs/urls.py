"""The `runs` namespace: the run list and run pages, new runs, imports."""

from django.urls import path

from runs.calls import views as calls
from runs.imports.views import run_import, run_import_sample
from runs.labels.views import run_labels, session_detail
from runs.launch import views

app_name = "runs"

urlpatterns = [
    path("", views.run_list, name="list"),
    path("new/", views.run_new, name="new"),
    path("live/", views.run_list_live, name="live_rows"),
    path("import/", run_import, name="import"),
    path("import/sample.jsonl", run_import_sample, name="import_sample"),
    path("<int:run_id>/", views.run_detail, name="detail"),
    path("<int:run_id>/steps/", views.run_steps, name="steps"),
    path("<int:run_id>/stop/", views.run_stop, name="stop"),
    path("<int:run_id>/waterfall/", views.run_waterfall, name="waterfall"),
    path("<int:run_id>/spans/", views.run_span_tree, name="spans"),
    path("<int:run_id>/export.jsonl", views.run_export, name="export"),
    path("<int:run_id>/calls/<int:step_index>/", calls.call_detail, name="call"),
    path("<int:run_id>/calls/<int:step_index>.json", calls.call_json, name="call_json"),
    path("<int:run_id>/calls/<int:step_index>/replay/", calls.call_replay_view, name="call_replay"),
    path("<int:run_id>/labels/", run_labels, name="labels"),
    path("session/", session_detail, name="session"),
]
