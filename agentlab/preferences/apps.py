from django.apps import AppConfig


class PreferencesConfig(AppConfig):
    name = "agentlab.preferences"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The receiver reads a model, so it is connected once the models are loaded (Django's rule for signals).
        from django.contrib.auth.signals import user_logged_in

        from agentlab.preferences.language import restore_language

        user_logged_in.connect(restore_language, dispatch_uid="agentlab.preferences.restore_language")
