from django.urls import path

from runs.failures import views

app_name = "failures"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("<int:run_id>/", views.item, name="item"),
    path("<int:run_id>/label/", views.label, name="label"),
]
