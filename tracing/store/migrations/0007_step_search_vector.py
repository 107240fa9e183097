import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models


def backfill(apps, schema_editor):
    # The index is built after the backfill: filling an indexed column row by
    # row would update the GIN index a million times.
    from tracing.core.stepindex import index_steps

    index_steps(schema_editor.connection)


class Migration(migrations.Migration):

    dependencies = [
        ('tracing', '0006_model_calls'),
    ]

    operations = [
        migrations.AddField(
            model_name='step',
            name='search',
            field=django.contrib.postgres.search.SearchVectorField(blank=True, editable=False, null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name='step',
            index=django.contrib.postgres.indexes.GinIndex(fields=['search'], name='step_search_gin'),
        ),
        migrations.AddIndex(
            model_name='externalrun',
            index=models.Index(fields=['external_id'], name='external_run_external_id_idx'),
        ),
    ]
