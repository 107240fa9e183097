import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentlab.settings")
application = get_wsgi_application()
# Everything loaded so far (Django, the apps, their modules) lives as long as
# the process: keep it out of the cyclic collector's full passes, which a bulk
# request's thousands of parsed steps trigger several times (about a tenth of
# a 5,000-step POST /api/runs, bench/README-ingest.md 2026-12-01). Each
# gunicorn worker imports this itself (no preload), so each freezes its own.
gc.freeze()
