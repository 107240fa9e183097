"""Outcome and status apart, run context, findings, idempotent imports (issue 11).

Fast on big tables: new columns get constant defaults (no rewrite on Postgres
11+), dropped NOT NULLs are catalogue changes, and the data changes are a few
set-based UPDATEs that touch only the rows they change.
"""

import django.db.models.fields.json
from django.conf import settings
from django.db import migrations, models

# A run that ended is `finished` whatever its outcome; `success` keeps the outcome.
STATUS_SQL = [
    "UPDATE runs_run SET status = 'finished' WHERE status IN ('succeeded', 'failed')",
    "UPDATE runs_reviewitem SET run_status = 'finished' WHERE run_status IN ('succeeded', 'failed')",
    # A person's Stop was scored as a wrong answer: it is no answer at all.
    "UPDATE runs_run SET success = NULL WHERE status = 'stopped' AND stopped_by = 'user' AND success IS NOT NULL",
]

# Runs from outside (provider `import`) never said their temperature or
# budget: the importers wrote 0.0 / 20,000 / the step count. JSONL imports also
# stamped start = finish = import time (a duration of 0.0 s); API and OTLP runs
# keep their start, which is when they came in.
UNKNOWN_SQL = [
    "UPDATE runs_run SET temperature = NULL, max_tokens = NULL, max_steps = NULL, "
    "started_at = CASE WHEN started_at = finished_at THEN NULL ELSE started_at END "
    "WHERE provider = 'import'",
]

# Imports made before dedup: the first run of each (owner, source, id in the
# file) becomes the one a re-import finds; later copies stay as they are.
SOURCE_RUN_SQL = [
    """UPDATE runs_run r SET source_run_id = d.key FROM (
        SELECT DISTINCT ON (owner_id, source, settings->>'external_run_id') id, settings->>'external_run_id' AS key
        FROM runs_run
        WHERE provider = 'import' AND settings ? 'external_run_id'
          AND length(settings->>'external_run_id') BETWEEN 1 AND 200
        ORDER BY owner_id, source, settings->>'external_run_id', id) d
    WHERE r.id = d.id""",
]


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0008_list_sort_indexes'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='anchor_findings',
            field=models.JSONField(blank=True, db_default=[], default=list),
        ),
        migrations.AddField(
            model_name='run',
            name='context',
            field=models.JSONField(blank=True, db_default={}, default=dict),
        ),
        migrations.AddField(
            model_name='run',
            name='source_run_id',
            field=models.CharField(blank=True, db_default='', default='', max_length=200),
        ),
        migrations.AlterField(
            model_name='run',
            name='max_steps',
            field=models.PositiveIntegerField(blank=True, default=30, null=True),
        ),
        migrations.AlterField(
            model_name='run',
            name='max_tokens',
            field=models.PositiveIntegerField(blank=True, default=20000, null=True),
        ),
        migrations.AlterField(
            model_name='run',
            name='status',
            field=models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('finished', 'Finished'), ('stopped', 'Stopped'), ('error', 'Error')], default='queued', max_length=10),
        ),
        migrations.AlterField(
            model_name='run',
            name='temperature',
            field=models.FloatField(blank=True, default=0.0, null=True),
        ),
        migrations.RunSQL(STATUS_SQL + UNKNOWN_SQL + SOURCE_RUN_SQL, migrations.RunSQL.noop),
        migrations.AddIndex(
            model_name='run',
            index=models.Index(django.db.models.fields.json.KeyTextTransform('pattern', 'anchor_evidence'), models.OrderBy(models.F('created_at'), descending=True), models.OrderBy(models.F('id'), descending=True), condition=models.Q(('first_anchor_break__isnull', False)), name='run_anchor_pattern_idx'),
        ),
        migrations.AddConstraint(
            model_name='run',
            constraint=models.UniqueConstraint(condition=models.Q(('source_run_id', ''), _negated=True), fields=('owner', 'source', 'source_run_id'), name='run_source_run_uniq', nulls_distinct=False),
        ),
    ]
