from django.urls import path

from runs.reviews import views

app_name = "reviews"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("figures/", views.figures, name="figures"),
    path("export.csv", views.export_csv, name="export_csv"),
    path("export.jsonl", views.export_jsonl, name="export_jsonl"),
    # "What if…" forks of any run from an edited step (a reviewer's tool).
    path("whatif/<int:run_id>/<int:index>/", views.run_fork_edited, name="whatif"),
    path("<int:run_id>/<int:index>/", views.item_detail, name="item"),
    path("<int:run_id>/<int:index>/label/", views.item_label, name="label"),
    path("<int:run_id>/<int:index>/fork/", views.item_fork, name="fork"),
    path("<int:run_id>/<int:index>/fork/steps/", views.item_fork_steps, name="fork_steps"),
]
