from django.urls import path

from runs.compare import views as compare_views

app_name = "compare"

urlpatterns = [
    path("", compare_views.compare_runs, name="page"),
    path("group/<int:group_id>/", compare_views.compare_group, name="group"),
    path("cell/", compare_views.compare_cell, name="cell"),
    path("diff/", compare_views.compare_diff, name="diff"),
    path("save/", compare_views.compare_save, name="save"),
]
