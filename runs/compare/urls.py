from django.urls import path

from runs.compare import views

app_name = "compare"

urlpatterns = [
    path("", views.compare_runs, name="page"),
    path("group/<int:group_id>/", views.compare_group, name="group"),
    path("cell/", views.compare_cell, name="cell"),
    path("diff/", views.compare_diff, name="diff"),
    path("save/", views.compare_save, name="save"),
]
