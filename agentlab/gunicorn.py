"""gunicorn's configuration: `gunicorn -c python:agentlab.gunicorn agentlab.wsgi`.

WEB_WORKERS processes of WEB_THREADS threads each (gthread: a slow client holds
a thread, not a process). Each worker process gets Django's Postgres pool with
one connection per thread, so a request never waits for a connection and the
web server never holds more than WEB_WORKERS x WEB_THREADS of them, whatever
arrives: the rest waits in the listen backlog, not in Postgres.
"""

from __future__ import annotations

import os

from agentlab.env import env_int, env_str, load_env_file

load_env_file()
workers = env_int("WEB_WORKERS", 2)
threads = env_int("WEB_THREADS", 4)
worker_class = "gthread"
bind = [env_str("WEB_BIND", f"127.0.0.1:{env_int('PORT', 8000)}")]
# Read by agentlab/settings.py when each worker imports the app (no preload).
os.environ.setdefault("DB_POOL_MAX_SIZE", str(threads))
os.environ.setdefault("DB_APPLICATION_NAME", "agentlab-web")
# A request taking longer than this is a bug: the worker is restarted.
timeout = env_int("WEB_TIMEOUT_S", 60)
graceful_timeout = env_int("WEB_GRACEFUL_TIMEOUT_S", 10)
keepalive = 5
backlog = 2048
accesslog = env_str("WEB_ACCESS_LOG", "") or None
errorlog = "-"
loglevel = env_str("WEB_LOG_LEVEL", "warning")
# Behind a proxy: which addresses may set X-Forwarded-* (gunicorn's default: 127.0.0.1).
forwarded_allow_ips = env_str("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
proc_name = "agentlab-web"

