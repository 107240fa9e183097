from django.urls import path

from runs.policies import views

urlpatterns = [
    path("", views.policy_list, name="policy_list"),
    path("new/", views.policy_edit, name="policy_new"),
    path("<slug:name>/edit/", views.policy_edit, name="policy_edit"),
]
