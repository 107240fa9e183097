"""Every API token has a project (0004 filled them in; apart, as runs 0011 explains)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("tracing", "0004_token_project")]

    operations = [
        migrations.AlterField("apitoken", "project", models.ForeignKey(
            on_delete=django.db.models.deletion.CASCADE, related_name="api_tokens", to="projects.project")),
    ]
