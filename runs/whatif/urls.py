from django.urls import path

from runs.whatif import views

urlpatterns = [
    path("", views.whatif_new, name="whatif_new"),
    path("<int:job_id>/", views.whatif_job, name="whatif_job"),
    path("<int:job_id>/save/<int:position>/", views.whatif_save, name="whatif_save"),
]
