"""Steps are written with `search` NULL and indexed a few seconds later
(tracing.store.step_indexer, issue 31): a partial index of the unindexed rows
lets the indexer and the search's raw-text fallback find them without reading
the indexed ones. Built concurrently: on a big table a plain CREATE INDEX
would block every writer for the length of a full scan."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ('tracing', '0012_pending_events'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='step',
            index=models.Index(condition=models.Q(('search__isnull', True)), fields=['id'], name='step_unindexed_idx'),
        ),
    ]
