from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "agentlab.projects"
    label = "projects"
    default_auto_field = "django.db.models.BigAutoField"
