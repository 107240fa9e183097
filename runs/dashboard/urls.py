from django.urls import path

from runs.dashboard import views

urlpatterns = [
    path("", views.dashboard_page, name="dashboard"),
]
