from __future__ import annotations

from django import forms
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from runs.core.error_text import LABEL, translated
from runs.core.models import Run
from tracing.core.label_limits import (
    MAX_METADATA_BYTES,
    MAX_SESSION_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    LabelError,
    Labels,
    clean_labels,
    parse_metadata_text,
    parse_tag_text,
)

# What the boxes accept before the limits are checked field by field: enough
# to say "1,000 tags is too many" rather than "the text is too long".
_MAX_BOX_CHARS = 100_000


class RunLabelsForm(forms.Form):
    tags = forms.CharField(label=_("Tags"), required=False, max_length=_MAX_BOX_CHARS, strip=False,
                           help_text=format_lazy(_("comma-separated; at most {n} tags of {chars} characters"), n=MAX_TAGS,
                                                 chars=MAX_TAG_CHARS),
                           widget=forms.TextInput(attrs={"size": 50}))
    metadata = forms.CharField(label=_("Metadata"), required=False, max_length=_MAX_BOX_CHARS, strip=False,
                               help_text=format_lazy(_("one key=value a line; {size} bytes in all"), size=f"{MAX_METADATA_BYTES:,}"),
                               widget=forms.Textarea(attrs={"rows": 3, "cols": 50, "class": "mono"}))
    session_id = forms.CharField(required=False, max_length=MAX_SESSION_CHARS, label=_("session"))

    @classmethod
    def for_run(cls, run: Run, data=None) -> RunLabelsForm:
        initial = {"tags": ", ".join(run.tags),
                   "metadata": "\n".join(f"{k}={v}" for k, v in run.metadata.items()),
                   "session_id": run.session_id}
        return cls(data, initial=initial)

    def clean(self):
        data = super().clean()
        self.labels = None
        if self.errors:
            return data
        for name, parse in (("tags", parse_tag_text), ("metadata", parse_metadata_text)):
            try:
                data[name] = parse(data.get(name) or "")
            except LabelError as exc:
                self.add_error(name, translated(str(exc), LABEL))
        if self.errors:
            return data
        try:
            self.labels: Labels | None = clean_labels(tags=data["tags"], metadata=data["metadata"],
                                                      session_id=data.get("session_id"))
        except LabelError as exc:
            field = str(exc).split(":", 1)[0].split(".", 1)[0]
            self.add_error(field if field in self.fields else None, translated(str(exc), LABEL))
        return data
