"""The header's language switch: Django's set_language (a CSRF-checked POST that
sets the language cookie and goes back), and for a signed-in user the choice
stored, so their next log-in anywhere opens in it."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from django.views.i18n import set_language

from agentlab.preferences.language import SESSION_KEY
from agentlab.preferences.models import LanguagePreference


@require_POST
def language_switch(request: HttpRequest) -> HttpResponse:
    language = request.POST.get("language", "")
    if language not in dict(settings.LANGUAGES):
        choices = ", ".join(code for code, _name in settings.LANGUAGES)
        return HttpResponseBadRequest(_("Unknown language %(language)r: choose one of %(choices)s.")
                                      % {"language": language[:20], "choices": choices})
    response = set_language(request)
    request.session[SESSION_KEY] = language
    if request.user.is_authenticated:
        LanguagePreference.objects.update_or_create(user=request.user, defaults={"language": language})
    return response
