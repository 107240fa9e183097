"""The login form, bounded before django-axes sees it (issue 28).

Django's AuthenticationForm shows a username's max length in the widget but
never checks it, so any length reaches authenticate(): django-axes records the
failed attempt, its username column holds 255 characters, and a longer one
was a 500. The field is checked first; a form with a field error is never
authenticated, so the lockout library never sees it.
"""

from __future__ import annotations

from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from agentlab.storable import unstorable


class LoginForm(AuthenticationForm):
    def clean_username(self) -> str:
        username = self.cleaned_data.get("username") or ""
        limit = self.fields["username"].max_length
        if limit and len(username) > limit:
            raise ValidationError(_("A username has at most %(limit)d characters.") % {"limit": limit}, code="max_length")
        why = unstorable(username)
        if why:
            raise ValidationError(_("The username %(why)s.") % {"why": why}, code="invalid")
        return username
