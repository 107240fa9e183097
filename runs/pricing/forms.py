from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from runs.core.prices import ModelPrice


class ModelPriceForm(forms.ModelForm):
    class Meta:
        model = ModelPrice
        fields = ["prefix", "prompt_per_m", "completion_per_m"]

    def clean_prefix(self) -> str:
        prefix = self.cleaned_data["prefix"].strip()
        if not prefix:
            raise forms.ValidationError(_("Name a model or a prefix of model names."))
        return prefix


PriceFormSet = forms.modelformset_factory(ModelPrice, form=ModelPriceForm, extra=1, can_delete=True,
                                          max_num=500, validate_max=True)
