from django.urls import path

from agentlab.projects import views

app_name = "projects"

urlpatterns = [
    path("switch/", views.project_switch, name="switch"),
    path("members/", views.member_list, name="members"),
    path("members/<int:membership_id>/role/", views.member_role, name="member_role"),
    path("members/<int:membership_id>/remove/", views.member_remove, name="member_remove"),
]
