"""The account form an admin fills in for someone, and an invited person for themselves."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm

from agentlab.storable import unstorable


class AccountForm(UserCreationForm):
    """Username and password (twice), with Django's checks: a username nobody
    has (case-insensitively) and the password validators of the settings.
    `username` given: the account's name is fixed (an invite kept it)."""

    def __init__(self, *args, username: str = "", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Plain words instead of Django's HTML list of the validators' rules.
        self.fields["password1"].help_text = ("At least 8 characters, not only digits, not a common password "
                                              "and not like the username.")
        if username:
            self.fields["username"].initial = username
            self.fields["username"].disabled = True

    def clean(self):
        for name in ("username", "password1", "password2"):
            why = unstorable(str(self.data.get(name, "")))
            if why:
                self.add_error(name if name in self.fields else None, f"{name}: {why}")
        return super().clean()


class MemberAccountForm(AccountForm):
    """An admin creating someone's account: and the role they get in the project."""

    role = forms.ChoiceField()

    def __init__(self, *args, roles, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["role"].choices = roles
