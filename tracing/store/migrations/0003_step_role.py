"""Step roles (issue 11): a column with a constant default (no table rewrite),
then the rows that are not the assistant's set by the inference of
tracing.core.steps.role_of, in two set-based UPDATEs that touch only observations and
interventions. The tool names are written out: a migration must not change
when the code's constant does.
"""

from django.db import migrations, models

USER_TOOLS = ("user", "human", "customer", "ask_user", "human_input")

BACKFILL_SQL = [
    "UPDATE tracing_step SET role = 'watchdog' WHERE kind = 'intervention'",
    "UPDATE tracing_step SET role = CASE WHEN lower(btrim(tool, E' \\t\\r\\n')) IN ({}) THEN 'user' ELSE 'tool' END "
    "WHERE kind = 'observation'".format(", ".join(f"'{t}'" for t in USER_TOOLS)),
]


class Migration(migrations.Migration):

    dependencies = [
        ('tracing', '0002_ingest'),
    ]

    operations = [
        migrations.AddField(
            model_name='step',
            name='role',
            field=models.CharField(choices=[('assistant', 'Assistant'), ('tool', 'Tool'), ('user', 'User'), ('system', 'System'), ('watchdog', 'Watchdog')], db_default='assistant', default='assistant', max_length=10),
        ),
        migrations.RunSQL(BACKFILL_SQL, migrations.RunSQL.noop),
    ]
