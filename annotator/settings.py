"""One settings module, read from the environment, with embedded defaults so `make run` needs nothing.

Every variable is documented in `.env.example`. Without DATABASE_URL the app uses a SQLite file under
var/; without REDIS_URL Celery runs tasks inline (eager), which is what a laptop demo wants.
"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from annotator.env import envbool, envint, envlist, envstr

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(envstr("VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

# ---- Security: debug, secrets (issue 11, hardening) ---------------------------------------------------
# DEBUG is off unless set (`make run` sets it for the demo). Only a DEBUG demo may start without secrets:
# anywhere else a missing SECRET_KEY or FIELD_ENCRYPTION_KEY stops the start instead of running on a
# publicly known key.
DEBUG = envbool("DEBUG", False)
_DEMO_SECRET_KEY = "django-insecure-local-demo-key-" + "0" * 24
SECRET_KEY = envstr("SECRET_KEY") or (_DEMO_SECRET_KEY if DEBUG else "")
if not SECRET_KEY:
    raise ImproperlyConfigured(
        "SECRET_KEY must be set when DEBUG is off. Generate one with: "
        "python3 -c 'import secrets; print(secrets.token_urlsafe(50))' (or set DEBUG=true for a local demo)"
    )
# The key material for stored LLM API keys (annotator/llm/secrets.py), separate from SECRET_KEY so that
# rotating one does not touch the other; derived from SECRET_KEY only in a DEBUG demo.
FIELD_ENCRYPTION_KEY = envstr("FIELD_ENCRYPTION_KEY") or (SECRET_KEY if DEBUG else "")
if not DEBUG and (not FIELD_ENCRYPTION_KEY or FIELD_ENCRYPTION_KEY == SECRET_KEY):
    raise ImproperlyConfigured(
        "FIELD_ENCRYPTION_KEY must be set, and differ from SECRET_KEY, when DEBUG is off: it encrypts the "
        "stored LLM API keys. Generate one like SECRET_KEY."
    )
# ---- end of security: debug, secrets ------------------------------------------------------------------
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "annotator.apps.OperatorsAdminConfig",  # django.contrib.admin, superusers only
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "axes",  # login lockout (see the block "Sign-in limits and API tokens" below)
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "taxonomy",
    "traces",
    "annotator",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Before anything reads the body: refuses oversized uploads unread and NUL bytes in any input.
    "annotator.middleware.InputGuardMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    # DEBUG's URL list is for developers: users of the demo get our 404 page (annotator/views/errors.py).
    "annotator.views.errors.OwnNotFoundPageMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into its lockout response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "annotator.urls"
WSGI_APPLICATION = "annotator.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
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

DATABASE_URL = envstr("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=envint("DB_CONN_MAX_AGE", 60))}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "db.sqlite3",
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(envstr("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
WHITENOISE_USE_FINDERS = DEBUG
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
MEDIA_ROOT = VAR_DIR / "media"
UPLOAD_DIR = VAR_DIR / "uploads"
EXPORT_DIR = VAR_DIR / "exports"
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# Import limits (see .env.example): one request's files, and what every parser accepts per record.
IMPORT_MAX_UPLOAD_MB = envint("IMPORT_MAX_UPLOAD_MB", 512)
IMPORT_MAX_DEPTH = envint("IMPORT_MAX_DEPTH", 100)
IMPORT_MAX_VALUE_MB = envint("IMPORT_MAX_VALUE_MB", 32)
IMPORT_MAX_RECORD_MB = envint("IMPORT_MAX_RECORD_MB", 64)
IMPORT_MAX_ARCHIVE_MB = envint("IMPORT_MAX_ARCHIVE_MB", 2048)
IMPORT_MAX_ZIP_RATIO = envint("IMPORT_MAX_ZIP_RATIO", 200)
# A hard ceiling on the memory one import may add to its process (0: none), whatever decodes.
IMPORT_MAX_MEMORY_MB = envint("IMPORT_MAX_MEMORY_MB", 2048)
# Live traces (annotator/live, docs/live.md): a trace is assembled once its root span has ended and no span
# of it arrived for OTLP_TRACE_QUIET_SECONDS; one whose root never comes, after OTLP_TRACE_ABANDON_SECONDS.
# One request carries at most OTLP_MAX_SPANS spans (its body is bounded by IMPORT_MAX_RECORD_MB), and at
# most OTLP_MAX_PENDING_SPANS may wait per project before the endpoint answers 429 (back-pressure).
OTLP_TRACE_QUIET_SECONDS = envint("OTLP_TRACE_QUIET_SECONDS", 30)
OTLP_TRACE_ABANDON_SECONDS = envint("OTLP_TRACE_ABANDON_SECONDS", 3600)
OTLP_MAX_SPANS = envint("OTLP_MAX_SPANS", 10000)
OTLP_MAX_PENDING_SPANS = envint("OTLP_MAX_PENDING_SPANS", 1000000)
OTLP_RETRY_AFTER_SECONDS = envint("OTLP_RETRY_AFTER_SECONDS", 5)
# Consumed spans of a live trace nobody labels are deleted this many days after its last span (annotator.live.tidy);
# a span arriving later for it is held, not merged.
OTLP_KEEP_SPANS_DAYS = envint("OTLP_KEEP_SPANS_DAYS", 30)

REDIS_URL = envstr("REDIS_URL")
# The cache is an accelerator, never a dependency: with Redis down every call answers "no cache" within
# CACHE_TIMEOUT_SECONDS and the cache stays bypassed for a few seconds (annotator/cache.py), so pages and
# submits keep working.
CACHE_TIMEOUT_SECONDS = float(envstr("CACHE_TIMEOUT_SECONDS", "0.5"))
CACHES = (
    {
        "default": {
            "BACKEND": "annotator.cache.ResilientRedisCache",
            "LOCATION": envstr("CACHE_URL", REDIS_URL),
            # Installations (or benchmark runs) sharing one Redis keep their keys apart.
            "KEY_PREFIX": envstr("CACHE_KEY_PREFIX"),
            "OPTIONS": {
                "socket_connect_timeout": CACHE_TIMEOUT_SECONDS,
                "socket_timeout": CACHE_TIMEOUT_SECONDS,
            },
        }
    }
    if REDIS_URL
    else {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
)
SESSION_ENGINE = "django.contrib.sessions.backends.db"

CELERY_BROKER_URL = REDIS_URL or "memory://localhost/"
CELERY_RESULT_BACKEND = REDIS_URL or "cache+memory://"
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", not REDIS_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = envstr("CELERY_DEFAULT_QUEUE", "default")
# Each kind of long work may get its own queue (a long export must never starve agreement): set the
# variable and start a worker with `-Q` for it. By default everything shares one queue.
CELERY_TASK_ROUTES = {
    "annotator.run_import_job": {"queue": envstr("CELERY_IMPORT_QUEUE", CELERY_TASK_DEFAULT_QUEUE)},
    "annotator.agreement.*": {"queue": envstr("CELERY_AGREEMENT_QUEUE", CELERY_TASK_DEFAULT_QUEUE)},
    "annotator.adjudication.*": {"queue": envstr("CELERY_AGREEMENT_QUEUE", CELERY_TASK_DEFAULT_QUEUE)},
    "annotator.exports.*": {"queue": envstr("CELERY_EXPORT_QUEUE", CELERY_TASK_DEFAULT_QUEUE)},
    "annotator.llm.*": {"queue": envstr("CELERY_LLM_QUEUE", CELERY_TASK_DEFAULT_QUEUE)},
    "annotator.jobs.*": {"queue": envstr("CELERY_AGREEMENT_QUEUE", CELERY_TASK_DEFAULT_QUEUE)},
    "annotator.live.*": {"queue": envstr("CELERY_IMPORT_QUEUE", CELERY_TASK_DEFAULT_QUEUE)},
}
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# Services never wait on a task's result (jobs report through their rows): no result round trip per task.
CELERY_TASK_IGNORE_RESULT = True
# A broker that is down must fail a request fast (the job is then marked failed with a reason, see
# annotator/services/enqueue.py), not hold it for tens of seconds of connection retries.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 2, "socket_timeout": 5}
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = 2
CELERY_REDIS_SOCKET_TIMEOUT = 5
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
# Nothing stuck, nothing lost (annotator/services/jobs.py): a running job beats every
# JOB_HEARTBEAT_SECONDS; one silent for JOB_HEARTBEAT_TIMEOUT lost its worker and is resumed (up to
# JOB_MAX_ATTEMPTS claims) or failed; one queued for JOB_RESEND_AFTER is sent again. Celery beat runs the
# reconciliation every JOB_RECONCILE_SECONDS (`celery -A annotator.celery beat`, or a worker with -B).
JOB_HEARTBEAT_SECONDS = envint("JOB_HEARTBEAT_SECONDS", 10)
JOB_HEARTBEAT_TIMEOUT = envint("JOB_HEARTBEAT_TIMEOUT", 120)
JOB_RESEND_AFTER = envint("JOB_RESEND_AFTER", 120)
JOB_MAX_ATTEMPTS = envint("JOB_MAX_ATTEMPTS", 3)
JOB_RECONCILE_SECONDS = envint("JOB_RECONCILE_SECONDS", 60)
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    "reconcile-jobs": {"task": "annotator.jobs.reconcile", "schedule": float(JOB_RECONCILE_SECONDS)},
    # Live traces whose assembly task was lost (a worker restart) are assembled on the next sweep.
    "sweep-live-traces": {"task": "annotator.live.sweep", "schedule": float(JOB_RECONCILE_SECONDS)},
}

# Agreement reports (see annotator/services/reports/jobs.py for the debounce): bootstrap resamples per mode
# (and per rater pair), how long a burst of submits is collected before one recompute, and up to how many
# submitted annotations an eager (worker-less) install recomputes inline on submit.
AGREEMENT_BOOTSTRAP = envint("AGREEMENT_BOOTSTRAP", 1000)
AGREEMENT_PAIR_BOOTSTRAP = envint("AGREEMENT_PAIR_BOOTSTRAP", 200)
AGREEMENT_DEBOUNCE_SECONDS = envint("AGREEMENT_DEBOUNCE_SECONDS", 30)
# With a worker, traces completed within this many seconds of each other are checked for the
# adjudication queue by one task (annotator.services.followups).
ADJUDICATION_COLLECT_SECONDS = envint("ADJUDICATION_COLLECT_SECONDS", 1)
AGREEMENT_INLINE_MAX_ANNOTATIONS = envint("AGREEMENT_INLINE_MAX_ANNOTATIONS", 5000)

# Dataset exports and publishing to the Hugging Face Hub (annotator/services/exports/). HF_ENDPOINT is
# also what `huggingface_hub` and `datasets` read, so imports from hf://owner/name use the same Hub. A
# token typed at export time waits in the cache at most EXPORT_TOKEN_TTL seconds (see exports/jobs.py).
HF_ENDPOINT = envstr("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
EXPORT_TOKEN_TTL = envint("EXPORT_TOKEN_TTL", 900)
# No usage telemetry from a server process; and one export is one plain commit (no hf_xet upload pipeline,
# which splits large folders into several commits). Both are read when huggingface_hub is imported.
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_DISABLE_XET", "1")

# The LLM rater (annotator/llm, services/llm/runs.py): how long one task
# labels before it re-enqueues itself (so a long run never pins a worker, and a lost worker loses little).
LLM_TASK_SECONDS = envint("LLM_TASK_SECONDS", 120)
# ---- LLM endpoints an owner may use (issue 11, point 1) -----------------------------------------------
# The environment variables a project may take its API key from ("NAME", or "NAME=prefix|prefix" to send
# that key only to base URLs starting with a prefix); none by default: owners store a key instead. And the
# base-URL prefixes allowed although their host is private or loopback (a local vLLM or Ollama, e.g.
# http://127.0.0.1:11434/v1); any other base URL must resolve to public addresses only.
LLM_KEY_ENVS = envlist("LLM_KEY_ENVS", [])
LLM_ALLOWED_BASE_URLS = envlist("LLM_ALLOWED_BASE_URLS", [])
# ---- end of LLM endpoints -----------------------------------------------------------------------------

# ---- Sign-in limits and API tokens (issue 11, hardening) ----------------------------------------------
# django-axes locks a username out, from the address that failed, after LOGIN_FAILURE_LIMIT wrong passwords
# (login page, admin and POST /api/token/ alike) for LOGIN_LOCKOUT_MINUTES; a success resets the count.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = envint("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=envint("LOGIN_LOCKOUT_MINUTES", 15))
# The address is REMOTE_ADDR (behind a proxy: the proxy's), so a lockout is per username in practice there.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# JSON in the API's one error shape under /api/, axes' plain message elsewhere (annotator/api/errors.py).
AXES_LOCKOUT_CALLABLE = "annotator.api.errors.lockout_response"
AXES_VERBOSE = False  # no "AXES: BEGIN" banner on every management command
# API tokens are stored hashed and expire after API_TOKEN_TTL_DAYS (0: never); POST /api/token/ is also
# throttled per client address (API_TOKEN_RATE, DRF's "N/minute" form).
API_TOKEN_TTL_DAYS = envint("API_TOKEN_TTL_DAYS", 90)
API_TOKEN_RATE = envstr("API_TOKEN_RATE", "10/minute")
if not re.fullmatch(r"\d+/(s|sec|second|m|min|minute|h|hour|d|day)", API_TOKEN_RATE):
    raise ImproperlyConfigured(f"API_TOKEN_RATE={API_TOKEN_RATE!r} is not a rate such as 10/minute")
# ---- end of sign-in limits and API tokens -------------------------------------------------------------

# ---- Project administration (issue 15, point 2) ----------------------------------------------------
# Who may create projects from the home page and POST /api/projects/: "staff" (the default) or "any" signed-in
# user. The creator becomes the project's owner.
PROJECT_CREATORS = envstr("PROJECT_CREATORS", "staff").strip().lower()
if PROJECT_CREATORS not in ("staff", "any"):
    raise ImproperlyConfigured(f"PROJECT_CREATORS={PROJECT_CREATORS!r}: use staff or any")
# Invitations: an invited person gets a one-time set-password link (Django's password-reset tokens, valid
# PASSWORD_RESET_TIMEOUT seconds). The link is shown to the owner to copy, and e-mailed through EMAIL_BACKEND
# (the console by default: printed to the server's log). Set EMAIL_BACKEND=...smtp.EmailBackend and EMAIL_HOST,
# EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD, EMAIL_USE_TLS to send real mail.
EMAIL_BACKEND = envstr("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = envstr("EMAIL_HOST", "localhost")
EMAIL_PORT = envint("EMAIL_PORT", 25)
EMAIL_HOST_USER = envstr("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = envstr("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", "annotator@localhost")
PASSWORD_RESET_TIMEOUT = envint("PASSWORD_RESET_TIMEOUT", 3 * 24 * 3600)
# ---- end of project administration ------------------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "annotator.api.auth.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_THROTTLE_RATES": {"api-token": API_TOKEN_RATE},
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    # drf-spectacular's generator with the shared 400/401/403/404 answers documented on every operation.
    "DEFAULT_SCHEMA_CLASS": "annotator.api.schema.AutoSchema",
    # Every error body in one documented shape: {"detail", "errors"?, "fields"?} (annotator/api/errors.py).
    "EXCEPTION_HANDLER": "annotator.api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Trace annotator API",
    "DESCRIPTION": "Import agent traces, label failures blind, measure agreement, adjudicate, publish.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and the docs page are for signed-in users (session or token), like every page.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Several models have a `status`; name their enums so the schema is stable and readable.
    "ENUM_NAME_OVERRIDES": {
        "AssignmentStatusEnum": "annotator.models.projects.Assignment.Status",
        "AnnotationStatusEnum": "annotator.models.annotations.Annotation.Status",
        "TraceOutcomeEnum": "traces.models.Outcome",
        "JobStatusEnum": "annotator.models.jobs.JobStatus",  # the one status enum of every job model
    },
    # Swagger UI served from our own static files (no CDN).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if envbool("BEHIND_TLS_PROXY") else None
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", False)
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", not DEBUG)
CSRF_FAILURE_VIEW = "annotator.views.errors.csrf_failure"  # our 403 page, in plain words
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = SECURE_HSTS_SECONDS > 0
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
}
