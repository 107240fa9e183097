"""At log-in, the user's stored language goes into their session, where the
middleware reads it on every request without a query."""

from __future__ import annotations

from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver

from agentlab.preferences.models import LanguagePreference

SESSION_KEY = "language"


@receiver(user_logged_in)
def _restore_language(sender, request, user, **kwargs) -> None:
    if request is None or not hasattr(request, "session"):
        return
    language = LanguagePreference.objects.filter(user=user).values_list("language", flat=True).first()
    if language:
        request.session[SESSION_KEY] = language
