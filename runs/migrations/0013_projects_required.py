"""Every run, policy, rerun group and what-if job has a project (0010 filled them in).

Apart from 0010: Postgres refuses to ALTER a table with pending trigger events
(the deferred foreign-key checks of the rows 0010 updated) in one transaction.
"""

import django.db.models.deletion
from django.db import migrations, models


def _fk(related_name):
    return models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name=related_name,
                             to="projects.project")


class Migration(migrations.Migration):
    dependencies = [("runs", "0012_projects")]

    operations = [
        migrations.AlterField("rerungroup", "project", _fk("groups")),
        migrations.AlterField("run", "project", models.ForeignKey(
            on_delete=django.db.models.deletion.PROTECT, related_name="runs", to="projects.project")),
        migrations.AlterField("policy", "project", _fk("policies")),
        migrations.AlterField("whatifjob", "project", _fk("+")),
        migrations.RemoveConstraint("policy", "policy_name_version_uniq"),
        migrations.AddConstraint("policy", models.UniqueConstraint(
            fields=("project", "name", "version"), name="policy_name_version_uniq")),
        migrations.RemoveConstraint("run", "run_source_run_uniq"),
        migrations.AddConstraint("run", models.UniqueConstraint(
            condition=models.Q(("source_run_id", ""), _negated=True), fields=("project", "owner", "source", "source_run_id"),
            name="run_source_run_uniq", nulls_distinct=False)),
        migrations.AddIndex("run", models.Index(fields=["project", "-created_at", "-id"], name="run_project_list_idx")),
    ]
