"""Model calls stored smaller (issue 15: <= 20% of a 30-step run's size).

Message bodies and raw responses deflated, digests cut to 128 bits, the
``previous`` link replaced by step order, and the foreign-key indexes nothing
reads dropped. bench/README-model-calls.md has the figures.
"""

import json

import django.db.models.deletion
from django.db import migrations, models

BATCH = 500


def _chains_by_step_order(apps, schema_editor):
    # A call's prefix now refers to the run's call at the next lower step.
    # Where ``previous`` named another call (never written so by the recorder,
    # but the column allowed it), the call keeps its whole message list.
    ModelCall = apps.get_model("tracing", "ModelCall")
    run_ids = ModelCall.objects.filter(prefix_len__gt=0).values_list("run_id", flat=True).distinct()
    for run_id in run_ids.iterator():
        calls = list(ModelCall.objects.filter(run_id=run_id).order_by("step_index")
                     .values_list("pk", "previous_id", "prefix_len", "suffix_ids"))
        full: dict[int, list[int]] = {}
        before = None
        for pk, previous, prefix, suffix in calls:
            full[pk] = full.get(previous, [])[:prefix] + list(suffix) if prefix else list(suffix)
            if prefix and previous != before:
                ModelCall.objects.filter(pk=pk).update(prefix_len=0, suffix_ids=full[pk])
            before = pk


def _deflate(apps, schema_editor):
    from tracing.core.packing import pack

    with schema_editor.connection.cursor() as cur:
        for table, source, target, canonical in (("tracing_callmessage", "body", "deflated", True),
                                                 ("tracing_modelcall", "response", "response_deflated", False)):
            last = 0
            while True:
                cur.execute(f"SELECT id, {source}::text FROM {table} WHERE id > %s AND {source} IS NOT NULL "
                            "ORDER BY id LIMIT %s", [last, BATCH])
                rows = cur.fetchall()
                if not rows:
                    break
                # Bodies were digested as sorted-key JSON; jsonb's own key order is not that.
                packed = [pack(json.dumps(json.loads(text), ensure_ascii=False, sort_keys=canonical))
                          for _pk, text in rows]
                cur.execute(f"UPDATE {table} SET {target} = v.data FROM unnest(%s::bigint[], %s::bytea[]) "
                            f"AS v(id, data) WHERE {table}.id = v.id", [[pk for pk, _ in rows], packed])
                last = rows[-1][0]


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0016_prices_and_cost_budget'),
        ('tracing', '0007_step_search_vector'),
    ]

    operations = [
        migrations.RunPython(_chains_by_step_order, migrations.RunPython.noop),
        migrations.RemoveField(model_name='modelcall', name='previous'),
        migrations.RunSQL(
            "ALTER TABLE tracing_callmessage ALTER COLUMN digest TYPE uuid "
            "USING encode(substring(digest from 1 for 16), 'hex')::uuid",
            migrations.RunSQL.noop,
            state_operations=[migrations.AlterField(model_name='callmessage', name='digest',
                                                    field=models.UUIDField(unique=True))],
        ),
        migrations.AddField(model_name='callmessage', name='deflated', field=models.BinaryField(null=True)),
        migrations.AddField(model_name='modelcall', name='response_deflated',
                            field=models.BinaryField(blank=True, null=True)),
        migrations.RunPython(_deflate, migrations.RunPython.noop),
        migrations.RemoveField(model_name='callmessage', name='body'),
        migrations.RemoveField(model_name='modelcall', name='response'),
        migrations.AlterField(model_name='callmessage', name='deflated', field=models.BinaryField()),
        migrations.AlterField(
            model_name='modelcall', name='run',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                    related_name='model_calls', to='runs.run'),
        ),
        migrations.AlterField(
            model_name='modelcall', name='tools',
            field=models.ForeignKey(blank=True, db_index=False, null=True,
                                    on_delete=django.db.models.deletion.PROTECT, related_name='+',
                                    to='tracing.callmessage'),
        ),
        migrations.AlterField(
            model_name='modelcall', name='params_ref',
            field=models.ForeignKey(blank=True, db_index=False, null=True,
                                    on_delete=django.db.models.deletion.PROTECT, related_name='+',
                                    to='tracing.callmessage'),
        ),
    ]
