from django.apps import AppConfig


class PreferencesConfig(AppConfig):
    name = "agentlab.preferences"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agentlab.preferences import signals  # noqa: F401  (connects the log-in receiver)
