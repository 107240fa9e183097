"""Drop the plain (run_id) index on steps: the unique (run_id, index) serves
every query it did, and on a run ANALYZE had not seen yet the planner chose the
plain one, read all the run's steps and sorted them (issue 31). Also ~11 MiB
less per million steps and one index write less per step."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tracing', '0010_guard_state'),
    ]

    operations = [
        migrations.AlterField(
            model_name='step',
            name='run',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='steps',
                                    to='runs.run'),
        ),
    ]
