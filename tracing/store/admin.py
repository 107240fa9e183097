from django.contrib import admin

from tracing.store.models import Step


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    list_display = ("run", "index", "kind", "tool")
    list_filter = ("kind",)
    raw_id_fields = ("run",)
