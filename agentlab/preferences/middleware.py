"""Which language a request is answered in: the signed-in user's choice (kept
in their session since log-in, see signals.py), else what Django's
LocaleMiddleware finds (the language cookie set by the header's switch, then
the browser's Accept-Language), else English."""

from __future__ import annotations

from django.http import HttpRequest
from django.middleware.locale import LocaleMiddleware
from django.utils import translation

from agentlab.preferences.signals import SESSION_KEY


class UserLanguageMiddleware(LocaleMiddleware):
    def process_request(self, request: HttpRequest) -> None:
        chosen = request.session.get(SESSION_KEY) if hasattr(request, "session") else None
        if chosen and translation.check_for_language(chosen):
            translation.activate(chosen)
            request.LANGUAGE_CODE = translation.get_language()
            return
        super().process_request(request)
