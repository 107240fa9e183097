# As in Celery's Django example (examples/django/proj/celery.py).
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentlab.settings")

app = Celery("agentlab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
