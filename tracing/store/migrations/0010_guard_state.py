# The guard of API runs (tracing.store.guard): the watchdog state kept between step requests.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0018_evaluation_cost_budget'),
        ('tracing', '0009_deletion_records_and_retention'),
    ]

    operations = [
        migrations.CreateModel(
            name='GuardState',
            fields=[
                ('run', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='guard', serialize=False, to='runs.run')),
                ('mode', models.CharField(choices=[('act', 'Act'), ('observe', 'Observe')], max_length=8)),
                ('policy', models.JSONField()),
                ('state', models.JSONField(blank=True, default=dict)),
                ('last_index', models.IntegerField(default=-1)),
                ('stop', models.JSONField(blank=True, null=True)),
                ('stop_sent_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'indexes': [models.Index(condition=models.Q(('stop_sent_at__isnull', False)), fields=['stop_sent_at'], name='guard_stop_pending_idx')],
            },
        ),
        migrations.CreateModel(
            name='GuardMemo',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.SmallIntegerField(choices=[(0, 'Feature'), (1, 'Source')])),
                ('digest', models.BigIntegerField()),
                ('source', models.BigIntegerField(null=True)),
                ('run', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='runs.run')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('run', 'kind', 'digest'), name='guard_memo_uniq')],
            },
        ),
    ]
