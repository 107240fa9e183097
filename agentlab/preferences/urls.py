from django.urls import path

from agentlab.preferences import views

urlpatterns = [
    path("language/", views.language_switch, name="set_language"),
]
