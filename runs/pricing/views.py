"""The price table: every row editable at once, one extra row to add a model."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from runs.core import access
from runs.core.prices import ModelPrice
from runs.pricing.forms import PriceFormSet


@login_required
@require_http_methods(["GET", "POST"])
def price_table(request: HttpRequest) -> HttpResponse:
    formset = PriceFormSet(request.POST or None, queryset=ModelPrice.objects.all())
    if request.method == "POST":
        # One table for every project (a model costs what it costs): an admin's to change.
        access.require_admin(request)
        if formset.is_valid():
            with transaction.atomic():
                formset.save()
            messages.success(request, _("Prices saved."))
            return redirect("prices")
        return render(request, "pricing/prices.html", {"formset": formset}, status=400)
    return render(request, "pricing/prices.html", {"formset": formset})
