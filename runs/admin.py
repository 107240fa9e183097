from django.contrib import admin

from runs.core.models import Document, RerunGroup, Run, Task


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "suite", "lang", "scoring", "gold_answer")
    list_filter = ("suite", "lang", "scoring")
    search_fields = ("slug", "title", "prompt")


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "lang")
    list_filter = ("lang",)
    search_fields = ("slug", "title")


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "status", "task", "model_name", "mode", "step_count", "success", "created_at")
    list_filter = ("status", "mode", "provider")
    raw_id_fields = ("task", "group", "owner", "project")
    readonly_fields = ("step_count", "prompt_tokens", "completion_tokens", "latency_ms")


admin.site.register(RerunGroup)
