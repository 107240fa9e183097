"""Existing users become members of a `default` project, by what they could do before.

Superusers become its admins; users who held the reviewer permission
(`runs.label_interruption`, directly or through a group) reviewers; everyone
else viewers. A fresh database (no users) gets no project: `loaddemo` or an
admin creates the first one. The runs, tasks, policies and tokens move in
with the migrations of their apps.
"""

from django.db import migrations
from django.db.models import Q

DEFAULT_SLUG = "default"


def default_project(apps):
    Project = apps.get_model("projects", "Project")
    return Project.objects.get_or_create(slug=DEFAULT_SLUG, defaults={"name": "Default"})[0]


def forwards(apps, schema_editor):
    User = apps.get_model("auth", "User")
    Membership = apps.get_model("projects", "Membership")
    users = list(User.objects.all())
    if not users:
        return
    project = default_project(apps)
    reviewer = Q(codename="label_interruption", content_type__app_label="runs")
    Permission = apps.get_model("auth", "Permission")
    reviewers = set(User.objects.filter(
        Q(user_permissions__in=Permission.objects.filter(reviewer))
        | Q(groups__permissions__in=Permission.objects.filter(reviewer))
    ).values_list("pk", flat=True))
    Membership.objects.bulk_create([
        Membership(user=u, project=project,
                   role="admin" if u.is_superuser else "reviewer" if u.pk in reviewers else "viewer")
        for u in users
    ], ignore_conflicts=True)


class Migration(migrations.Migration):
    dependencies = [
        ("projects", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
