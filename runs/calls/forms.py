"""The replay form: the call's messages as text boxes, and the model to ask."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from runs.core.form_fields import MODEL_CHOICES
from runs.core.terms import term
from tracing.core.model_calls import prompt_text

# A replayed message may be as long as a stored one may be shown (1 MB and a bit).
MAX_MESSAGE_CHARS = 1_100_000
MAX_TOTAL_CHARS = 4_000_000


def _sendable(part: Any) -> Any:
    """A media placeholder from a trace (tracing.core.model_calls.media_part) has no
    bytes to send: the model is told what was there instead of being sent a
    part type it would refuse."""
    if isinstance(part, dict) and part.get("omitted"):
        return {"type": "text", "text": f"[{part.get('type')} not recorded in the trace]"}
    return part


class ReplayForm(forms.Form):
    provider = forms.ChoiceField(choices=MODEL_CHOICES, label=_("Model"))
    model_name = forms.CharField(label=_("Model name"), max_length=120, required=False,
                                 help_text=_("Model name for an OpenAI-compatible endpoint."))
    temperature = forms.FloatField(label=_("Temperature"), min_value=0.0, max_value=2.0, required=False)
    max_tokens = forms.IntegerField(min_value=1, max_value=32_000, required=False, label=_("max output tokens"))

    def __init__(self, *args: Any, api: str, messages: list[Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.api, self.stored = api, messages
        if api == "completions":
            self.fields["content_0"] = forms.CharField(
                widget=forms.Textarea(attrs={"rows": 12}), required=False, strip=False,
                max_length=MAX_MESSAGE_CHARS, label=_("prompt"), initial=prompt_text(messages))
            return
        for i, message in enumerate(messages):
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str) or content is None:
                self.fields[f"content_{i}"] = forms.CharField(
                    widget=forms.Textarea(attrs={"rows": 3}), required=False, strip=False,
                    max_length=MAX_MESSAGE_CHARS, label=term(str(message.get("role", "?"))) if isinstance(message, dict)
                    else "?", initial=content or "")

    def message_fields(self):
        return [self[name] for name in self.fields if name.startswith("content_")]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        total = sum(len(data.get(name) or "") for name in self.fields if name.startswith("content_"))
        if total > MAX_TOTAL_CHARS:
            raise forms.ValidationError(f"The messages add up to {total:,} characters; at most "
                                        f"{MAX_TOTAL_CHARS:,} can be replayed.")
        if data.get("provider") == "openai" and not (data.get("model_name") or "").strip():
            self.add_error("model_name", _("Name the model to call on the OpenAI-compatible endpoint."))
        if data.get("provider") == "local" and self.api == "chat":
            self.add_error("provider", _("The local model takes a text prompt only; this call sent chat messages."))
        return data

    def edited_messages(self) -> list[dict[str, Any]]:
        """The stored messages with the edited text in place (media parts and
        tool calls as they were)."""
        if self.api == "completions":
            return [{"role": "prompt", "content": self.cleaned_data.get("content_0") or ""}]
        out = []
        for i, message in enumerate(self.stored):
            name = f"content_{i}"
            if name in self.fields and isinstance(message, dict):
                message = {**message, "content": self.cleaned_data.get(name) or ""}
                if message["content"] == "" and message.get("tool_calls"):
                    message["content"] = None  # an assistant turn that only called a tool
            elif isinstance(message, dict) and isinstance(message.get("content"), list):
                message = {**message, "content": [_sendable(part) for part in message["content"]]}
            out.append(message)
        return out
