"""API tokens belong to a project; the existing ones move into the `default` project (projects 0002).
An external run's id is unique within its run's project."""

import importlib

import django.db.models.deletion
from django.db import migrations, models

_projects = importlib.import_module("agentlab.projects.migrations.0002_default_project")


def forwards(apps, schema_editor):
    ApiToken = apps.get_model("tracing", "ApiToken")
    if ApiToken.objects.filter(project__isnull=True).exists():
        ApiToken.objects.filter(project__isnull=True).update(project=_projects.default_project(apps))
    ExternalRun = apps.get_model("tracing", "ExternalRun")
    ExternalRun.objects.update(project_id=models.Subquery(
        apps.get_model("runs", "Run").objects.filter(pk=models.OuterRef("run_id")).values("project_id")[:1]))


def _fk(*, null):
    return models.ForeignKey(blank=null, null=null, on_delete=django.db.models.deletion.CASCADE,
                             related_name="api_tokens", to="projects.project")


class Migration(migrations.Migration):
    dependencies = [
        ("projects", "0002_default_project"),
        ("tracing", "0003_step_role"),
        ("runs", "0012_projects"),
    ]

    operations = [
        migrations.AddField("apitoken", "project", _fk(null=True)),
        migrations.AddField("externalrun", "project", models.ForeignKey(
            null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="projects.project")),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
