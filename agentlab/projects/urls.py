from django.urls import path

from agentlab.projects import views

app_name = "projects"

urlpatterns = [
    path("switch/", views.project_switch, name="switch"),
    path("members/", views.member_list, name="members"),
    path("members/<int:membership_id>/role/", views.member_role, name="member_role"),
    path("members/<int:membership_id>/remove/", views.member_remove, name="member_remove"),
    path("members/create/", views.member_create, name="member_create"),
    path("members/invites/<int:invite_id>/revoke/", views.invite_revoke, name="invite_revoke"),
    # Public: the invited person has no account yet. The token is the credential.
    path("invites/<str:token>/", views.invite_accept, name="invite_accept"),
]
