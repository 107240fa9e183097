from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from agentlab import views as agentlab_views
from agentlab.login_form import LoginForm

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="runs:list", permanent=False), name="home"),
    # Pages name their icon (base.html); this answers what asks without reading one (the admin, feed readers).
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True), name="favicon"),
    path("runs/", include("runs.urls")),
    path("compare/", include("runs.compare.urls")),
    path("reviews/", include("runs.reviews.urls")),
    path("breaks/", include("runs.breaks.urls")),
    path("failures/", include("runs.failures.urls")),
    path("approvals/", include("runs.approvals.urls")),
    path("dashboard/", include("runs.dashboard.urls")),
    path("whatif/", include("runs.whatif.urls")),
    path("policies/", include("runs.policies.urls")),
    path("projects/", include("agentlab.projects.urls")),
    path("i18n/", include("agentlab.preferences.urls")),
    path("evaluations/", include("runs.evaluations.urls")),
    path("prices/", include("runs.pricing.urls")),
    path("deletions/", include("runs.deletion.urls")),
    path("", include("runs.health.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(authentication_form=LoginForm), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("local-model/status/", agentlab_views.local_model_status, name="local_model_status"),
    path("", include("tracing.store.api_urls")),
]
