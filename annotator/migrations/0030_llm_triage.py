"""LLM-assisted triage (issue 27, item 4): the model's confidence kept with its result, the project's queue
order, and the per-project trace ranks the claim orders by."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotator', '0029_llm_windows_and_prices'),
        ('traces', '0011_step_keyed_by_place'),
    ]

    operations = [
        migrations.AddField(
            model_name='llmtraceresult',
            name='confidence',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='project',
            name='queue_order',
            field=models.CharField(choices=[('trace', 'Trace order'), ('llm_uncertain', 'Where the model is least certain first'), ('llm_gold_disagreement', 'Where the model tends to disagree with gold first'), ('llm_rare_modes', 'Where the model marks modes people rarely saw first')], default='trace', max_length=24),
        ),
        migrations.CreateModel(
            name='TriageRank',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('rank', models.PositiveIntegerField()),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='triage_ranks', to='annotator.project')),
                ('trace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='traces.trace')),
            ],
            options={
                'ordering': ['project', 'rank'],
                'constraints': [models.UniqueConstraint(fields=('project', 'trace'), name='triage_rank_unique_trace')],
            },
        ),
    ]
