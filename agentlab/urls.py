from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from runs import dashboard_views, policy_views, whatif_views

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="runs:list", permanent=False)),
    path("runs/", include("runs.urls")),
    path("compare/", include("runs.compare_urls")),
    path("reviews/", include("runs.reviews.urls")),
    path("dashboard/", dashboard_views.dashboard_page, name="dashboard"),
    path("whatif/", whatif_views.whatif_new, name="whatif_new"),
    path("whatif/<int:job_id>/", whatif_views.whatif_job, name="whatif_job"),
    path("whatif/<int:job_id>/save/<int:position>/", whatif_views.whatif_save, name="whatif_save"),
    path("policies/", policy_views.policy_list, name="policy_list"),
    path("policies/new/", policy_views.policy_edit, name="policy_new"),
    path("policies/<slug:name>/edit/", policy_views.policy_edit, name="policy_edit"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("", include("tracing.api_urls")),
]
