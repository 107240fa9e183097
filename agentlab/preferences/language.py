"""Which language a request is answered in, and how a user's choice follows them.

The signed-in user's choice (stored by the header's switch, views.py) is put
in their session at log-in (`restore_language`), where the middleware reads it
on every request without a query; without one, Django's LocaleMiddleware
decides (the language cookie set by the switch, then the browser's
Accept-Language), else English.
"""

from __future__ import annotations

from django.db import DatabaseError
from django.http import HttpRequest
from django.middleware.locale import LocaleMiddleware
from django.utils import translation

from agentlab.preferences.models import LanguagePreference

SESSION_KEY = "language"


def restore_language(sender, request, user, **kwargs) -> None:
    """user_logged_in receiver (connected in apps.py): the stored language into the new session."""
    if request is None or not hasattr(request, "session"):
        return
    language = LanguagePreference.objects.filter(user=user).values_list("language", flat=True).first()
    if language:
        request.session[SESSION_KEY] = language


class UserLanguageMiddleware(LocaleMiddleware):
    def process_request(self, request: HttpRequest) -> None:
        try:
            chosen = request.session.get(SESSION_KEY) if hasattr(request, "session") else None
        except DatabaseError:
            # Postgres unreachable: the browser's language will do; the view that
            # needs the database raises, and the outage middleware answers 503.
            chosen = None
        if chosen and translation.check_for_language(chosen):
            translation.activate(chosen)
            request.LANGUAGE_CODE = translation.get_language()
            return
        super().process_request(request)
