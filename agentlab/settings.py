"""agentlab settings: one file, read from the environment (see .env.example)."""

from __future__ import annotations

from pathlib import Path

from agentlab.env import env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY", "dev-only-insecure-key-change-me")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])

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
    "runs",
    "tracing",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
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
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": env_str("DB_NAME", "agentlab"),
        "USER": env_str("DB_USER", "postgres"),
        "PASSWORD": env_str("DB_PASSWORD", ""),
        "HOST": env_str("DB_HOST", "127.0.0.1"),
        "PORT": env_int("DB_PORT", 5432),
        "CONN_MAX_AGE": env_int("DB_CONN_MAX_AGE", 60),
        "TEST": {"NAME": env_str("DB_TEST_NAME", "test_agentlab")},
    }
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_PASSWORD_VALIDATORS: list[dict[str, str]] = []
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "runs:list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static", ("plotly", Path(__import__("plotly").__file__).parent / "package_data")]
STATIC_ROOT = BASE_DIR / "staticfiles"

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

# Models. All of them are reached through the openai client by base URL.
SIM_BASE_URL = env_str("SIM_BASE_URL", "http://127.0.0.1:8765/v1")
LOCAL_MODEL_BASE_URL = env_str("LOCAL_MODEL_BASE_URL", "http://127.0.0.1:8766/v1")
LOCAL_MODEL_NAME = env_str("LOCAL_MODEL_NAME", "gemma-3-270m")
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL", "")
OPENAI_API_KEY = env_str("OPENAI_API_KEY", "")
MODEL_REQUEST_TIMEOUT_S = env_float("MODEL_REQUEST_TIMEOUT_S", 60.0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
}
