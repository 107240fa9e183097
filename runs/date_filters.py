"""The one parser of the date filters (run list, dashboard, what-if): a day, and the range of created_at it means.

A filter's `until` is the whole day, so the range ends at midnight after it,
and the dashboard's axis starts the day before `since`: on Python's last day
(9999-12-31) or first (0001-01-01) that arithmetic overflowed, a 500. Days
are bounded so that both steps fit, and a day outside is a form error naming
its field.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from django import forms
from django.core.exceptions import ValidationError

# Before any run could exist, with room for the axis' day before.
FIRST_DAY = date(1970, 1, 1)
# Python's last date minus the day `until` adds to end its range.
LAST_DAY = date(9999, 12, 30)


def day_start(day: date) -> datetime:
    """Midnight UTC: the dashboard counts runs per UTC day, and so do the filters."""
    return datetime.combine(day, time.min, tzinfo=UTC)


def created_range(since: date | None, until: date | None) -> dict[str, datetime]:
    """The created_at lookups of a since / until pair (either may be missing), as a range the indexes serve."""
    lookups = {}
    if since:
        lookups["created_at__gte"] = day_start(since)
    if until:
        lookups["created_at__lt"] = day_start(until + timedelta(days=1))
    return lookups


class FilterDateField(forms.DateField):
    """A filter's day (`YYYY-MM-DD`), between FIRST_DAY and LAST_DAY."""

    widget = forms.DateInput(attrs={"type": "date"})

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_python(self, value) -> date | None:
        day = super().to_python(value)
        if day is not None and not FIRST_DAY <= day <= LAST_DAY:
            raise ValidationError(f"a day from {FIRST_DAY} to {LAST_DAY}, not {day}", code="out_of_range")
        return day
