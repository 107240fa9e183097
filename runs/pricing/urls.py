from django.urls import path

from runs.pricing import views

urlpatterns = [
    path("", views.price_table, name="prices"),
]
