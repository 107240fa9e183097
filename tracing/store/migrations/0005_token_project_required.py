"""Every API token has a project (0004 filled them in; apart, as runs 0011 explains)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("tracing", "0004_token_project"), ("runs", "0013_projects_required")]

    operations = [
        migrations.AlterField("apitoken", "project", models.ForeignKey(
            on_delete=django.db.models.deletion.CASCADE, related_name="api_tokens", to="projects.project")),
        migrations.AlterField("externalrun", "project", models.ForeignKey(
            on_delete=django.db.models.deletion.CASCADE, related_name="+", to="projects.project")),
        migrations.RemoveConstraint("externalrun", "external_run_uniq"),
        migrations.AddConstraint("externalrun", models.UniqueConstraint(
            fields=("project", "owner", "source", "external_id"), name="external_run_uniq")),
    ]
