"""agentlab settings: one file, read from the environment (see .env.example)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from csp.constants import NONE, SELF

from agentlab.env import ConfigError, env_bool, env_float, env_int, env_list, env_str, load_env_file

BASE_DIR = Path(__file__).resolve().parent.parent

# `.env` (see .env.example) fills in what the environment does not set.
ENV_FILE = load_env_file()

DEBUG = env_bool("DEBUG", False)
# No default key outside DEBUG: a guessable key signs sessions anyone can forge.
# `make demo` generates one for itself (kept in .env); tests set their own.
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ConfigError(
            "SECRET_KEY is not set and DEBUG is off. Set it in the environment or in .env, e.g. "
            "SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')"
        )
    SECRET_KEY = "django-insecure-debug-only-key"
elif not DEBUG and len(SECRET_KEY) < 32:
    raise ConfigError(f"SECRET_KEY is too short ({len(SECRET_KEY)} characters): use 50 random ones")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django.contrib.postgres",
    "django_htmx",
    "csp",
    "axes",
    "agentlab.projects",
    "agentlab.preferences",
    "runs",
    "tracing.store",
]

MIDDLEWARE = [
    # First: counts every 5xx response for /metrics.
    "runs.health.middleware.ServerErrorCounter",
    "django.middleware.security.SecurityMiddleware",
    # Static files from the app server itself (compressed, cached); no nginx needed.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Postgres unreachable: 503 with Retry-After for every entry point (OTLP exporters retry 503, not 500).
    "agentlab.unavailable.DatabaseUnavailableMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # After the session and the user: a signed-in user's chosen language wins over the browser's.
    "agentlab.preferences.language.UserLanguageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its own response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "agentlab.urls"
WSGI_APPLICATION = "agentlab.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # Shared templates, then each feature package's own (runs/<feature>/templates).
        "DIRS": [BASE_DIR / "templates", *sorted(BASE_DIR.glob("runs/*/templates"))],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                # LANGUAGE_CODE and LANGUAGES: the page's lang and the header's language switch.
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "agentlab.projects.current.context",
            ],
            # {% load localmodel %}{% local_model_status %}: the New-run form's "local model: ..." line.
            "libraries": {"localmodel": "agentlab.templatetags.localmodel_status"},
            # Replaces Django's English-only pluralize in every template (Chinese has no plural endings).
            "builtins": ["agentlab.templatetags.plurals"],
        },
    },
]

# Postgres connections. With DB_POOL_MAX_SIZE > 0 (gunicorn sets it to its
# threads per worker, see agentlab/gunicorn.py) a process holds at most that
# many connections, whatever the traffic; Django's pool needs CONN_MAX_AGE 0.
# Without the pool (manage.py, Celery workers: one connection per process or
# task) connections close at the end of each request unless DB_CONN_MAX_AGE says
# otherwise: runserver's thread per request with persistent connections once
# held 200 of 200.
DB_POOL_MAX_SIZE = env_int("DB_POOL_MAX_SIZE", 0)
_db_options: dict[str, object] = {
    # Names the process in pg_stat_activity (the drill test counts by it).
    "application_name": env_str("DB_APPLICATION_NAME", "agentlab"),
}
if DB_POOL_MAX_SIZE > 0:
    _db_options["pool"] = {
        "min_size": min(env_int("DB_POOL_MIN_SIZE", 1), DB_POOL_MAX_SIZE),
        "max_size": DB_POOL_MAX_SIZE,
        # A request waits this long for a free connection, then fails (never more connections).
        "timeout": env_float("DB_POOL_TIMEOUT_S", 10.0),
    }
DB_NAME = env_str("DB_NAME", "agentlab")
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": DB_NAME,
        "USER": env_str("DB_USER", "postgres"),
        "PASSWORD": env_str("DB_PASSWORD", ""),
        "HOST": env_str("DB_HOST", "127.0.0.1"),
        "PORT": env_int("DB_PORT", 5432),
        "CONN_MAX_AGE": 0 if DB_POOL_MAX_SIZE > 0 else env_int("DB_CONN_MAX_AGE", 0),
        "OPTIONS": _db_options,
        # Derived from DB_NAME, so two checkouts (or CI jobs) with their own DB_NAME
        # sharing one Postgres never create and drop each other's test database.
        "TEST": {"NAME": env_str("DB_TEST_NAME", f"test_{DB_NAME}")},
    }
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# The passwords people choose in a form (an invite's, an account an admin creates);
# the demo's demo/demo is made by loaddemo, not through one.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"django.contrib.auth.password_validation.{name}"}
    for name in ("UserAttributeSimilarityValidator", "MinimumLengthValidator", "CommonPasswordValidator",
                 "NumericPasswordValidator")
]
AUTHENTICATION_BACKENDS = [
    # First, so a locked-out user is refused before the password is even checked.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Invites are emailed through Django's email backend: the console (the web log)
# unless EMAIL_BACKEND says otherwise, e.g. django.core.mail.backends.smtp.EmailBackend.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "agentlab@localhost")

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "runs:list"
LOGOUT_REDIRECT_URL = "login"

# English unless the browser asks for Chinese or the user chose it in the header
# (agentlab/preferences). The catalogue is locale/zh_Hans/LC_MESSAGES/django.po,
# compiled by `make setup`, `make demo` and the tests (scripts/gettext.sh).
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static", ("plotly", Path(__import__("plotly").__file__).parent / "package_data")]
STATIC_ROOT = BASE_DIR / "staticfiles"
# collectstatic writes gzip and brotli copies that whitenoise serves. Not the
# manifest storage: tests render pages without running collectstatic first.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# Security. Secure by default outside DEBUG; HTTPS=true when served over TLS
# (directly or behind a proxy that sets X-Forwarded-Proto) turns on the redirect,
# secure cookies and HSTS. `manage.py check --deploy` is clean with it
# (tests/ops/test_deploy_check.py).
HTTPS = env_bool("HTTPS", False)
SECURE_SSL_REDIRECT = HTTPS
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_HSTS_SECONDS = env_int("HSTS_SECONDS", 31_536_000) if HTTPS else 0
# Opt-ins (check --deploy's W005 / W021): they bind every subdomain, for a long time.
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("HSTS_PRELOAD", False)
if env_bool("BEHIND_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Every page: scripts, styles and data from this origin only. No inline script or
# style: pages load theirs from static/ (chart data rides in json_script blocks,
# which are not executed); htmx's own indicator style is off (templates/base.html).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# Login throttling (django-axes): after LOGIN_FAILURE_LIMIT wrong passwords for
# one user from one address, that pair is refused (429, templates/registration/
# locked_out.html) for LOGIN_LOCKOUT_MINUTES, the right password included; each
# further try during the lockout starts the wait again.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=env_float("LOGIN_LOCKOUT_MINUTES", 15.0))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False

# Celery. Redis is only the broker: Postgres holds every result worth keeping.
CELERY_BROKER_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# Runs are long: take one at a time so a busy worker does not hoard queued runs.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# The run task is idempotent (claim + resume from stored steps), so a worker
# that dies mid-run gets the message re-delivered instead of losing the run.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
RUN_TIME_LIMIT_S = env_int("RUN_TIME_LIMIT_S", 1800)
# How long a call to a writing tool waits for a reviewer before its run ends (runs/approvals).
APPROVAL_TTL_S = env_int("APPROVAL_TTL_S", 24 * 3600)
CELERY_TASK_SOFT_TIME_LIMIT = RUN_TIME_LIMIT_S
CELERY_TASK_TIME_LIMIT = RUN_TIME_LIMIT_S + 60
# Must exceed the longest run, or Redis re-delivers a run that is still going.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": RUN_TIME_LIMIT_S + 600}
# Fail fast in the web process when Redis is down: the form says so at once.
CELERY_BROKER_CONNECTION_TIMEOUT = env_float("BROKER_CONNECTION_TIMEOUT_S", 2.0)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Runs go to this queue; tests point it at a queue of their own so a demo
# worker on the same Redis never takes a test's run.
RUN_QUEUE = env_str("RUN_QUEUE", "agentlab-runs")
CELERY_TASK_DEFAULT_QUEUE = RUN_QUEUE

# Ingestion (tracing.store.ingest). The OTLP endpoint stores spans and answers; the
# analysis of the runs a request ended (signals, the replayed watchdog policy,
# the anchor break) runs in a Celery task, unless this is set (tests; a
# deployment without workers), when it runs in the request.
INGEST_ANALYSE_INLINE = env_bool("INGEST_ANALYSE_INLINE", False)
# A pattern demoted (or restored) by reviewers' labels re-analyses the
# project's runs it changes in a Celery task, unless this is set (tests; a
# deployment without workers), when it runs in the request (runs.breaks).
BREAKS_REANALYSE_INLINE = env_bool("BREAKS_REANALYSE_INLINE", False)
# A trace with no new span for this long whose root span never came (lost,
# or the process died) is ended by `manage.py closetraces` / the beat entry below.
INGEST_TRACE_TIMEOUT_S = env_float("INGEST_TRACE_TIMEOUT_S", 900.0)
# A guarded API run (tracing.store.guard) that was sent a stop ends `stopped` by the
# watchdog when the agent next writes, or after this long without a word from
# it (swept with the stale traces, below).
GUARD_STOP_TIMEOUT_S = env_float("GUARD_STOP_TIMEOUT_S", 60.0)
# Postgres is the source of truth for the queue too (runs.launch.lease,
# runs.launch.reconcile). A worker holds the run it executes with an advisory
# lock and a heartbeat; the reconciler, every RECONCILE_INTERVAL_S on every
# worker (runs.launch.sweeper) and from beat on a control queue of its own,
# re-sends queued runs whose message is gone and resumes running runs nobody holds.
RUN_CONTROL_QUEUE = env_str("RUN_CONTROL_QUEUE", f"{RUN_QUEUE}-control")
RUN_HEARTBEAT_S = env_float("RUN_HEARTBEAT_S", 3.0)
# A running run whose lock is free and whose heartbeat is older than this is
# resumed (or ended) by the reconciler.
RUN_STALE_S = env_float("RUN_STALE_S", 9.0)
# A queued run older than this with no message in the broker is sent again.
RUN_QUEUED_GRACE_S = env_float("RUN_QUEUED_GRACE_S", 10.0)
# A run resumed this many times ends `error` instead (a run that kills its worker).
RUN_MAX_RESUMES = env_int("RUN_MAX_RESUMES", 3)
# How long a worker retries a database that went away mid-run before leaving
# the run to the reconciler.
RUN_DB_PATIENCE_S = env_float("RUN_DB_PATIENCE_S", 30.0)
RECONCILE_INTERVAL_S = env_float("RECONCILE_INTERVAL_S", 5.0)
# Steps' search column (tracing.store.step_indexer): writers leave it NULL and
# the sweepers fill it within a tick, up to this many batches of 2,000 steps
# each (searches find unindexed steps by their raw text meanwhile). Inline
# writes the column with the step, as before (at 1.5-2x the cost of a write).
STEP_SEARCH_INLINE = env_bool("STEP_SEARCH_INLINE", False)
STEP_INDEX_BATCHES_PER_TICK = env_int("STEP_INDEX_BATCHES_PER_TICK", 10)
CELERY_BEAT_SCHEDULE = {
    "reconcile-runs": {
        "task": "runs.reconcile",
        "schedule": RECONCILE_INTERVAL_S,
        # A sweep nobody took in time is replaced by the next one, not queued up.
        "options": {"queue": RUN_CONTROL_QUEUE, "expires": RECONCILE_INTERVAL_S * 2},
    },

    # One more indexer beside the workers' sweepers (tracing.store.step_indexer), under its lock.
    "index-steps": {
        "task": "tracing.store.tasks.index_steps",
        "schedule": RECONCILE_INTERVAL_S,
        "options": {"queue": RUN_CONTROL_QUEUE, "expires": RECONCILE_INTERVAL_S * 2},
    },
    "close-stale-traces": {"task": "tracing.store.tasks.close_stale_traces", "schedule": 60.0},
    # Projects' retention (keep runs N days): older runs deleted in batches, each deletion recorded.
    "delete-expired-runs": {"task": "tracing.store.tasks.delete_expired_runs", "schedule": 3600.0,
                            "options": {"expires": 3600.0}},
    # Approval requests past APPROVAL_TTL_S end their runs with the reason, on
    # the control queue beside the reconciler (a busy run queue must not delay it).
    "expire-approvals": {
        "task": "runs.expire_approvals",
        "schedule": 30.0,
        "options": {"queue": RUN_CONTROL_QUEUE, "expires": 60.0},
    },
}

# Models. All of them are reached through the openai client by base URL.
SIM_BASE_URL = env_str("SIM_BASE_URL", "http://127.0.0.1:8765/v1")
LOCAL_MODEL_BASE_URL = env_str("LOCAL_MODEL_BASE_URL", "http://127.0.0.1:8766/v1")
LOCAL_MODEL_NAME = env_str("LOCAL_MODEL_NAME", "gemma-3-270m")
# The local model server's context window (its --n_ctx): runs fit their prompt into it.
LOCAL_MODEL_CONTEXT_TOKENS = env_int("LOCAL_MODEL_CONTEXT_TOKENS", 2048)
# Written by `make demo` while it builds and starts the local model (agentlab/localmodel.py).
LOCAL_MODEL_STATE_FILE = Path(env_str("LOCAL_MODEL_STATE_FILE", str(BASE_DIR / "var" / "run" / "localmodel.json")))
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL", "")
OPENAI_API_KEY = env_str("OPENAI_API_KEY", "")
MODEL_REQUEST_TIMEOUT_S = env_float("MODEL_REQUEST_TIMEOUT_S", 60.0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
}
