"""The account form an admin fills in for someone, and an invited person for themselves."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy


class AccountForm(UserCreationForm):
    """Username and password (twice), with Django's checks: a username nobody
    has (case-insensitively), no NUL character, and the password validators of
    the settings.
    `username` given: the account's name is fixed (an invite kept it)."""

    def __init__(self, *args, username: str = "", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Plain words instead of Django's HTML list of the validators' rules.
        self.fields["password1"].help_text = _("At least 8 characters, not only digits, not a common password "
                                               "and not like the username.")
        if username:
            self.fields["username"].initial = username
            self.fields["username"].disabled = True


class MemberAccountForm(AccountForm):
    """An admin creating someone's account: and the role they get in the project."""

    role = forms.ChoiceField(label=gettext_lazy("Role"))

    def __init__(self, *args, roles, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["role"].choices = roles
        # Below the members and the invite form: focusing it would scroll a phone past them.
        self.fields["username"].widget.attrs.pop("autofocus", None)
