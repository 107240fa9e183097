"""The language a user chose in the header, kept for their next session on any browser."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class LanguagePreference(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True,
                                related_name="language_preference")
    language = models.CharField(max_length=10, choices=settings.LANGUAGES)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.user}: {self.language}"
