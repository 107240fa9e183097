import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="LanguagePreference",
            fields=[
                ("user", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True,
                                              related_name="language_preference", serialize=False,
                                              to=settings.AUTH_USER_MODEL)),
                ("language", models.CharField(choices=[("en", "English"), ("zh-hans", "简体中文")], max_length=10)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
        ),
    ]
