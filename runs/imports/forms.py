from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

# Uploads above this are refused before reading: use `manage.py importjsonl`.
MAX_UPLOAD_BYTES = 50 * 1024 * 1024


class ImportForm(forms.Form):
    file = forms.FileField(label=_("File"), help_text=_("JSONL: one trajectory per line, as in the example below"))
    source = forms.CharField(label=_("Source"), max_length=40, required=False, help_text=_("label for these runs (default: each line's source)"))

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(f"The file is over {MAX_UPLOAD_BYTES // (1024 * 1024)} MB; "
                                        "import it with `manage.py importjsonl` instead.")
        return upload
