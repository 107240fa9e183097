from django.urls import path

from runs.evaluations import views

app_name = "evaluations"

urlpatterns = [
    path("", views.evaluation_list, name="list"),
    path("new/", views.evaluation_new, name="new"),
    path("<int:evaluation_id>/", views.evaluation_detail, name="detail"),
]
