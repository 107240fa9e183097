from django.urls import path

from runs.approvals import views

app_name = "approvals"

urlpatterns = [
    path("", views.approval_list, name="list"),
    path("run/<int:run_id>/", views.run_panel, name="run_panel"),
    path("<int:approval_id>/decide/", views.decide, name="decide"),
]
