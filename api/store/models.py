"""The config store: tenants, scheduler settings, revisions and API tokens.

The database is the source of truth for every replica. Rows here are only
written by `api.store.services`, which validates, records a revision and bumps the
global config version in one transaction; nothing else may save them.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models

__all__ = [
    "SETTINGS_PK",
    "ApiToken",
    "ConfigRevision",
    "OperatorCancel",
    "RevisionTenant",
    "SchedulerSettings",
    "Tenant",
]

# The one row of SchedulerSettings. It also serialises config writes: every
# service locks it (select_for_update) before bumping the global version.
SETTINGS_PK = 1


class Tenant(models.Model):
    """One tenant's Cortex-shaped override block, stored as written.

    `config` holds `max_queriers_per_tenant`,
    `max_outstanding_requests_per_tenant` and `query_priority` exactly as the
    user or the runtime-config file gave them (after validation), so an
    export gives back what was imported. `version` is the global config
    version of the tenant's last change: it never repeats, not even when a
    tenant is deleted and created again, so a stale ETag can never match.
    """

    tenant_id = models.CharField(max_length=256, unique=True)
    config = models.JSONField(default=dict, blank=True)
    version = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant_id"]

    def __str__(self) -> str:
        return self.tenant_id


class SchedulerSettings(models.Model):
    """Queue-wide settings (the singleton row `SETTINGS_PK`).

    `config` is the settings dict understood by
    `scheduler_core.validation.queue_config_from_dict`; `{}` means every
    default. `version` is the global version of the settings' last change;
    `config_version` is the global config version itself, bumped by every
    write to any tenant or setting.
    """

    config = models.JSONField(default=dict, blank=True)
    version = models.PositiveBigIntegerField(default=0)
    config_version = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "scheduler settings"
        verbose_name_plural = "scheduler settings"

    def __str__(self) -> str:
        return f"Scheduler settings (config version {self.config_version})"


class ConfigRevision(models.Model):
    """One committed config change: who, when, from where, before and after.

    `before` is null for a creation and `after` is null for a deletion.
    `version` is the global config version the change produced, unique and
    increasing, so replicas can tell which revisions they have applied.
    """

    class Source(models.TextChoices):
        UI = "ui", "UI"
        API = "api", "API"
        YAML = "yaml", "runtime-config YAML"
        ROLLBACK = "rollback", "rollback"
        ADMIN = "admin", "admin"
        CLI = "cli", "command line"

    class Kind(models.TextChoices):
        TENANT = "tenant", "tenant"
        SETTINGS = "settings", "scheduler settings"
        RUNTIME_CONFIG = "runtime-config", "runtime-config import"

    created_at = models.DateTimeField(auto_now_add=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    # Kept apart from `author` so the record still names someone whose
    # account (or token) is gone.
    author_name = models.CharField(max_length=200, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    key = models.CharField(max_length=256, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    version = models.PositiveBigIntegerField(unique=True)
    message = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-version"]
        indexes = [models.Index(fields=["kind", "key"])]

    def __str__(self) -> str:
        target = f" {self.key}" if self.key else ""
        return f"#{self.version} {self.kind}{target} ({self.source})"


class RevisionTenant(models.Model):
    """A tenant a revision created, changed or deleted (`api.store.revision_tenants`).

    A tenant write names its tenant in `key`, but an import (and a rollback
    of one) changes any number with an empty `key`: without these rows a
    tenant's history could not say which import deleted it.
    """

    revision = models.ForeignKey(
        ConfigRevision, on_delete=models.CASCADE, related_name="tenants_changed"
    )
    tenant_id = models.CharField(max_length=256)

    class Meta:
        indexes = [models.Index(fields=["tenant_id"])]
        constraints = [
            models.UniqueConstraint(fields=["revision", "tenant_id"], name="revision_tenant_once")
        ]

    def __str__(self) -> str:
        return f"#{self.revision_id} {self.tenant_id}"


class ApiTokenQuerySet(models.QuerySet):
    """Tokens by their state at a given instant (the SQL side of `ApiToken.state`)."""

    def live(self, now: datetime) -> ApiTokenQuerySet:
        # Django's exclude keeps the rows whose expires_at is NULL.
        return self.filter(revoked=False).exclude(expires_at__lte=now)

    def expired(self, now: datetime) -> ApiTokenQuerySet:
        return self.filter(revoked=False, expires_at__lte=now)


class ApiToken(models.Model):
    """A bearer token for automation, frontends and queriers.

    Only the SHA-256 of the token is stored; the plaintext is shown once
    when issued. `prefix` lets people tell tokens apart without the secret.
    A token with `expires_at` stops working at that instant, as if revoked
    then; without one (every token issued before expiry existed) it works
    until revoked.
    """

    class Role(models.TextChoices):
        FRONTEND = "frontend", "frontend"
        QUERIER = "querier", "querier"
        VIEWER = "viewer", "viewer"
        EDITOR = "editor", "editor"

    name = models.CharField(max_length=200)
    role = models.CharField(max_length=16, choices=Role.choices)
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="Empty: the token never expires."
    )

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.role}, {self.prefix}…)"

    def state(self, now: datetime) -> str:
        """The token's state at `now`: revoked, expired or live (revoked wins: it is for good)."""
        if self.revoked:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "live"


class OperatorCancel(models.Model):
    """One operator's cancel of queued or running requests: who, when, what, how many.

    Written by `api.store.services.operator_cancel_record` after the
    scheduler answered, so `matched` and `cancelled` are what really
    happened: `request_id` names the one request of a single cancel;
    `filter` holds the fields of a cancel by filter (tenant, component,
    priority, search, regex, state); `replicas` the replicas that took
    part. Listed on the History page beside the config revisions.
    """

    created_at = models.DateTimeField(auto_now_add=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    author_name = models.CharField(max_length=200, blank=True)
    source = models.CharField(max_length=16, choices=ConfigRevision.Source.choices)
    request_id = models.CharField(max_length=400, blank=True)
    filter = models.JSONField(default=dict, blank=True)
    matched = models.PositiveIntegerField(default=0)
    cancelled = models.PositiveIntegerField(default=0)
    note = models.CharField(max_length=500, blank=True)
    replicas = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        what = self.request_id or "by filter"
        return f"cancel {what}: {self.cancelled} by {self.author_name or 'unknown'}"
