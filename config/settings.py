"""Settings for the queue inspector, read from environment variables.

Every value has a default that is safe for a single local process; a
deployment sets `SECRET_KEY`, `DATABASE_URL`, `REDIS_URL` and
`ALLOWED_HOSTS`. Nothing here is random per process, because several Daphne
replicas must agree on signed cookies and sessions: an unset `SECRET_KEY`
is one random key kept in `VAR_DIR` for every process sharing it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from api.wire.grpc.implementations import implementation_from_env
from api.wire.grpc.tls import TlsSettingError, client_tls_from_env, server_tls_from_env
from config.env_checks import (
    checked_regexes,
    database_from_env,
    env_flag,
    env_int,
    env_list,
    env_networks,
    env_path,
    env_seconds,
    env_text,
    proxy_ssl_header,
    redis_url_from_env,
    var_dir,
)
from config.secret_key import kept_secret_key
from config.slow_readers import SLOW_READER_SECONDS, UNSENT_LIMIT_BYTES
from scheduler_core.traffic import DEFAULT_MAX_BYTES, DEFAULT_PER_TENANT

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = var_dir("VAR_DIR", BASE_DIR / "var")

# Unset, a random key made once and kept in VAR_DIR (config.secret_key).
SECRET_KEY = os.environ.get("SECRET_KEY", "") or kept_secret_key(VAR_DIR)
DEBUG = env_flag("DEBUG")

# An empty value is the default: no hosts at all answered every request 400.
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "") or ["127.0.0.1", "localhost"]
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "api",
    "dashboard",
    "loadgen",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy on every response (CONTENT_SECURITY_POLICY below).
    "api.middleware.ContentSecurityPolicyMiddleware",
    # Cache-Control: private, no-cache unless a view says otherwise.
    "api.middleware.PrivateCacheMiddleware",
    # A NUL in the URL is refused (400) before any view can query with it.
    "api.middleware.RefuseNulMiddleware",
    # An /api/ URL without its final slash is a JSON 404 naming the URL with
    # it, before CommonMiddleware's APPEND_SLASH would redirect (or, for a
    # write with DEBUG on, fail with a 500).
    "api.middleware.ApiSlashMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The cookie that keeps a browser that logged in clear of its user name's
    # lockout (dashboard/login_devices.py).
    "dashboard.login_devices.DeviceCookieMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
# A page's form post: the tenant editor posts one field per box, so the largest
# tenant the validator allows (100 rules of 50 attributes) posts about 55,000
# fields and about 4 MB of names; Django's defaults (1,000 fields, 2.5 MB)
# answered a tenant of 80 one-line rules with a bare 400 and lost the draft.
# tests/dashboard/test_editor_largest_tenant.py counts them. The REST API
# reads its bodies through limits of its own (api.rest.content).
DATA_UPLOAD_MAX_NUMBER_FIELDS = 60_000
DATA_UPLOAD_MAX_MEMORY_SIZE = 16 * 1024 * 1024
ASGI_APPLICATION = "config.asgi.application"

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

DATABASES = {
    "default": database_from_env(
        "DATABASE_URL",
        f"sqlite:///{VAR_DIR / 'db.sqlite3'}",
        conn_max_age=env_int("DB_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # IMMEDIATE takes the write lock at BEGIN, so two config writers queue up
    # instead of failing on a lock upgrade; WAL lets pages read meanwhile.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = redis_url_from_env("REDIS_URL")
# Namespaces the channel layer's and the replica summaries' Redis keys, so
# several deployments (or test runs) can share one Redis.
CHANNEL_PREFIX = env_text("CHANNEL_PREFIX", "asgi")
CHANNEL_LAYERS: dict[str, Any]
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8 times socket reads out after 5 s by default, the very
            # length of channels_redis's blocking pop: a quiet group would
            # then kill its listener. Reads must outlast the pop.
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, "socket_timeout": 15}],
                "prefix": CHANNEL_PREFIX,
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
# The cache holds login-failure counts: in Redis every replica counts the same
# failures; otherwise each process counts its own.
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": CHANNEL_PREFIX,
            # A Redis that drops packets (not one that refuses) would hold each
            # login for redis-py's own timeouts before the throttle fails open.
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env_path("STATIC_ROOT", BASE_DIR / "staticfiles")

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"

# The throttle refuses locked-out logins before any password is checked
# (dashboard/login_throttle.py); counts are per user name and per address.
AUTHENTICATION_BACKENDS = [
    "dashboard.login_throttle.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
LOGIN_FAILURE_LIMIT_PER_ADDRESS = env_int("LOGIN_FAILURE_LIMIT_PER_ADDRESS", 20)
# At least 1: the throttle counts failures in windows of this length (0 divided by zero).
LOGIN_FAILURE_WINDOW_SECONDS = env_int("LOGIN_FAILURE_WINDOW_SECONDS", 900, least=1)
LOGIN_LOCKOUT_SECONDS = env_int("LOGIN_LOCKOUT_SECONDS", 900)

# How often an open inspector checks its login still holds (expiry, a
# deactivated user, a removed role end it; a logout ends it at once).
INSPECTOR_LOGIN_RECHECK_SECONDS = env_seconds("INSPECTOR_LOGIN_RECHECK_SECONDS", 30.0, least=0.1)
# Inspector sockets one login session may hold open on one replica at once:
# each costs a frame built every tick, so a script replaying a stolen cookie
# cannot make the broadcaster build thousands. A browser's tabs stay far below.
INSPECTOR_SOCKETS_PER_SESSION = env_int("INSPECTOR_SOCKETS_PER_SESSION", 32, least=1)
# And one user over all its sessions: each login is a new session, places and all.
INSPECTOR_SOCKETS_PER_USER = env_int("INSPECTOR_SOCKETS_PER_USER", 128, least=1)

# What-if simulations (api.rest.simulation): niced worker processes, the wall
# time one run may take, and off: run in the request thread (tests).
SIMULATION_WORKERS = env_int("SIMULATION_WORKERS", 2, least=1)
# Runs one user (or one API token) may have at once: the workers are shared.
SIMULATION_RUNS_PER_STARTER = env_int("SIMULATION_RUNS_PER_STARTER", 1, least=1)
SIMULATION_TIME_LIMIT_SECONDS = env_seconds("SIMULATION_TIME_LIMIT_SECONDS", 60.0)
SIMULATION_IN_WORKER_PROCESS = env_flag("SIMULATION_IN_WORKER_PROCESS", True)
# Addresses or networks of the proxies in front (e.g. "10.0.0.0/8,127.0.0.1"):
# only from them is X-Forwarded-For believed, read from the right.
LOGIN_TRUSTED_PROXIES = env_networks("LOGIN_TRUSTED_PROXIES")

# Every page loads its scripts, styles and data from this site only, so text
# that slipped into a page unescaped could still not run. Styles may be
# inline: the inspector, CodeMirror and the API docs apply them from script.
# The inspector's websocket is 'self' too; Redoc starts a blob: worker.
# Frames: none (as X-Frame-Options: DENY).
CONTENT_SECURITY_POLICY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self' 'unsafe-inline'",
    "img-src": "'self' data:",
    "font-src": "'self' data:",
    "connect-src": "'self'",
    "worker-src": "'self' blob:",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}

# Behind TLS (docs/operations.md): each off by default so plain-HTTP local use
# works; with all of them set, `manage.py check --deploy` is clean.
SECURE_SSL_REDIRECT = env_flag("SECURE_SSL_REDIRECT")
# Health probes often come over plain HTTP from inside; they are not redirected.
SECURE_REDIRECT_EXEMPT = checked_regexes(
    "SECURE_REDIRECT_EXEMPT", env_list("SECURE_REDIRECT_EXEMPT", r"^healthz$")
)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_flag("SECURE_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = env_flag("SECURE_HSTS_PRELOAD")
SECURE_PROXY_SSL_HEADER = proxy_ssl_header("SECURE_PROXY_SSL_HEADER")
# Any of those says the site is served over HTTPS; then the cookies are
# Secure unless set to 0. Otherwise a deployment that set the redirect but
# not the cookie flags sent the session cookie in clear with the very
# request that got redirected (a bookmark or a typed http:// address).
_SERVED_OVER_HTTPS = (
    SECURE_SSL_REDIRECT or SECURE_HSTS_SECONDS > 0 or SECURE_PROXY_SSL_HEADER is not None
)
SESSION_COOKIE_SECURE = env_flag("SESSION_COOKIE_SECURE", _SERVED_OVER_HTTPS)
CSRF_COOKIE_SECURE = env_flag("CSRF_COOKIE_SECURE", _SERVED_OVER_HTTPS)

# A runtime-config import is seconds of CPU; in a worker process it leaves
# this process's GIL to the scheduler's event loop (see api/rest/offload.py).
CONFIG_IMPORT_IN_WORKER_PROCESS = env_flag("CONFIG_IMPORT_IN_WORKER_PROCESS", True)
# `manage.py loadtest`'s yardstick: a bare relay of the same messages (api/wire/routing.py).
LOADTEST_RELAY = env_flag("LOADTEST_RELAY")

# The scheduler runtime's own knobs (api/wire/runtime_host.py, queue_peers.py),
# read here so a bad value stops start-up naming it: read later, it left a
# server whose /healthz answered while its scheduler never started. Periods
# are at least 0.1 s: a microsecond's kept an idle server busy.
CONFIG_RECONCILE_SECONDS = env_seconds("CONFIG_RECONCILE_SECONDS", 5.0, least=0.1)
GROUP_REJOIN_SECONDS = env_seconds("GROUP_REJOIN_SECONDS", 5.0, least=0.1)
SHUTDOWN_DRAIN_TIMEOUT = env_seconds("SHUTDOWN_DRAIN_TIMEOUT", 10.0, zero_ok=True)
QUEUE_PEER_TIMEOUT = env_seconds("QUEUE_PEER_TIMEOUT", 2.0, least=0.1)
TRAFFIC_SAMPLE_PER_TENANT = env_int("TRAFFIC_SAMPLE_PER_TENANT", DEFAULT_PER_TENANT)
TRAFFIC_SAMPLE_MAX_BYTES = env_int("TRAFFIC_SAMPLE_MAX_BYTES", DEFAULT_MAX_BYTES)
# Objects before the collector runs (config/asgi.py); 0 would turn it off,
# and gc.set_threshold takes no more than a C int.
GC_GEN0_THRESHOLD = env_int("GC_GEN0_THRESHOLD", 50_000, least=1, most=2**31 - 1)

# A websocket client that reads nothing is dropped (config/slow_readers.py,
# installed by config.serve): once more than this many bytes wait unsent to
# it, its backlog is looked at every WEBSOCKET_SLOW_READER_SECONDS, and one
# that has not shrunk since the last look ends the connection.
WEBSOCKET_UNSENT_LIMIT_BYTES = env_int(
    "WEBSOCKET_UNSENT_LIMIT_BYTES", UNSENT_LIMIT_BYTES, least=65_536
)
if WEBSOCKET_UNSENT_LIMIT_BYTES > 2**40:
    raise ImproperlyConfigured(
        f"WEBSOCKET_UNSENT_LIMIT_BYTES must be at most 2**40, not {WEBSOCKET_UNSENT_LIMIT_BYTES}"
    )
WEBSOCKET_SLOW_READER_SECONDS = env_seconds("WEBSOCKET_SLOW_READER_SECONDS", SLOW_READER_SECONDS)
if not 0.1 <= WEBSOCKET_SLOW_READER_SECONDS <= 3600:
    raise ImproperlyConfigured(
        "WEBSOCKET_SLOW_READER_SECONDS must be a number of seconds from 0.1 to 3600, "
        f"not {WEBSOCKET_SLOW_READER_SECONDS}"
    )

# Port of Cortex's schedulerpb gRPC server, run on the ASGI event loop.
GRPC_PORT = env_int("GRPC_PORT", 9095)
# For measuring only (docs/protocol-grpc.md): loop turns a lean door waits
# before writing a connection's frames; 0 writes each at once.
GRPC_WRITE_BATCHING = env_int("GRPC_WRITE_BATCHING", 1)
# A gRPC connection with no open stream for this long gets GOAWAY (as Cortex's
# -server.grpc.keepalive.max-connection-idle); 0 keeps idle connections open.
# Frontends and queriers always hold a stream open, so only connections that
# never schedule anything (or have stopped) are closed; grpc-go clients reconnect.
GRPC_MAX_CONNECTION_IDLE_SECONDS = env_seconds(
    "GRPC_MAX_CONNECTION_IDLE_SECONDS", 300.0, zero_ok=True
)
if GRPC_PORT > 65535:
    raise ImproperlyConfigured(f"GRPC_PORT must be a port number up to 65535, not {GRPC_PORT}")
# Without mutual TLS anyone who reaches the gRPC door may schedule or take
# work, so it listens on loopback unless the operator opens it.
GRPC_HOST = env_text("GRPC_HOST", "127.0.0.1")
# host:port queriers on other hosts use to reach this replica's gRPC door.
GRPC_ADVERTISE_ADDRESS = os.environ.get("GRPC_ADVERTISE_ADDRESS", "")
# GRPC_TLS_* (the door, as Cortex's -server.grpc-tls-*) and GRPC_CLIENT_TLS_*
# (calls to frontends' QueryResult): files are read and checked once, here,
# so a bad value stops start-up instead of leaving the door plaintext.
try:
    GRPC_SERVER_TLS = server_tls_from_env(os.environ)
    GRPC_CLIENT_TLS = client_tls_from_env(os.environ)
except TlsSettingError as exc:
    raise ImproperlyConfigured(str(exc)) from exc
# Which server runs the gRPC door: "lean" (our HTTP/2 on the event loop, the
# default) or "grpcio" (grpc.aio); see docs/protocol-grpc.md.
try:
    GRPC_SERVER = implementation_from_env(os.environ)
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from exc
# /metrics is open by default, as Prometheus scrapers expect.
METRICS_REQUIRE_LOGIN = env_flag("METRICS_REQUIRE_LOGIN")
# A tenant's /metrics series go this long after it last had work queued or in
# flight (Cortex forgets inactive users after 15 minutes).
METRICS_TENANT_IDLE_SECONDS = env_int("METRICS_TENANT_IDLE_SECONDS", 900)

REST_FRAMEWORK = {
    # The token class goes first: DRF takes the 401 challenge from the first class.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.rest.auth.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Reads need the viewer or editor role, writes editor (see api.rest.auth).
    "DEFAULT_PERMISSION_CLASSES": ["api.rest.auth.RolePermission"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Reads `q=0` in Accept (DRF reads no quality values).
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "api.rest.negotiation.QualityNegotiation",
    # Config-store exceptions → 400 (nested field errors) / 404 / 412 / 428.
    "EXCEPTION_HANDLER": "api.rest.errors.api_exception_handler",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Queue inspector API",
    "DESCRIPTION": "Tenants, priority rules, scheduler settings, queue state and revisions.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The schema and its UI need a role, like every page but /metrics and health.
    "SERVE_PERMISSIONS": ["api.rest.auth.RolePermission"],
    "SCHEMA_PATH_PREFIX": "/api/v1/",
    # The default enum hook, then ours: closed objects where the server refuses
    # unknown fields (api/rest/schema.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.rest.schema.strict_objects",
    ],
    # A listed request's state is one enum, shared by the listing's rows and
    # a request's detail; without a name the two uses gave it a hashed one.
    "ENUM_NAME_OVERRIDES": {"QueueRequestStateEnum": ["queued", "in_flight"]},
}

# Read here, so a bad one stops start-up by name (logging's own refusal is a
# traceback about the root logger); any case, as operators write it.
LOG_LEVEL = os.environ.get("LOG_LEVEL", "").strip().upper() or "INFO"
if LOG_LEVEL not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
    raise ImproperlyConfigured(
        f"LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, not {LOG_LEVEL!r}"
    )

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {"client_faults": {"()": "config.log_filters.ClientFaults"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["client_faults"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
