"""Runs, tasks, policies, rerun groups and what-if jobs belong to a project;
the existing ones move into the `default` project (projects 0002)."""

import importlib

import django.db.models.deletion
from django.db import migrations, models

MODELS = ("Task", "RerunGroup", "Run", "Policy", "WhatIfJob")
_projects = importlib.import_module("agentlab.projects.migrations.0002_default_project")


def forwards(apps, schema_editor):
    models_ = [apps.get_model("runs", name) for name in MODELS]
    if not any(m.objects.filter(project__isnull=True).exists() for m in models_):
        return
    project = _projects.default_project(apps)
    for model in models_:
        model.objects.filter(project__isnull=True).update(project=project)


def _fk(related_name, *, null):
    return models.ForeignKey(blank=null, null=null, on_delete=django.db.models.deletion.CASCADE,
                             related_name=related_name, to="projects.project")


class Migration(migrations.Migration):
    dependencies = [
        ("projects", "0002_default_project"),
        ("runs", "0011_approvals"),
    ]

    operations = [
        migrations.AddField("task", "project", _fk("tasks", null=True)),
        migrations.AddField("rerungroup", "project", _fk("groups", null=True)),
        migrations.AddField("run", "project", models.ForeignKey(
            null=True, on_delete=django.db.models.deletion.PROTECT, related_name="runs", to="projects.project")),
        migrations.AddField("policy", "project", _fk("policies", null=True)),
        migrations.AddField("whatifjob", "project", _fk("+", null=True)),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
