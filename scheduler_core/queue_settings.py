"""Scheduler settings (`QueueConfig`) read from and written to their raw form.

The settings page, the REST API and the runtime-config YAML hand us a
(possibly partial) dict of queue-wide settings. As for tenant limits
(validation.py), one parse pass both collects every `FieldError`, keyed by
the raw setting name, and builds the changed `QueueConfig` fields, so
validating and applying a PATCH can never disagree. `validation` re-exports
the public names, so it stays the one import for every config validator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from scheduler_core import fields as f
from scheduler_core.actor_path import HEADER_NAME, MAX_HIERARCHY_LEVELS
from scheduler_core.durations import format_duration
from scheduler_core.errors import ConfigInvalid, FieldError
from scheduler_core.model import COMPONENT_SELECTIONS, LAYOUTS, QueueConfig

__all__ = ["queue_config_from_dict", "queue_config_to_dict", "validate_queue_settings"]


def _hierarchy_levels(value: object, path: str, errs: f.Collector) -> int | None:
    """Loki's `max_queue_hierarchy_levels`: 0 turns actor sub-queues off."""
    levels = f.integer(value, path, errs, 0)
    if levels is not None and levels > MAX_HIERARCHY_LEVELS:
        errs.add(path, f"must be at most {MAX_HIERARCHY_LEVELS}, got {levels}")
        return None
    return levels


# Headers that carry credentials (lower case): the actor path header's values
# are shown to viewers, so naming one of these would publish secrets. Our
# own tokens ride `Authorization` on every door; `X-Scope-OrgID` is allowed,
# as the tenant ID it carries is shown in every row anyway.
_CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "cookie2",
        "set-cookie",
        "set-cookie2",
        "x-api-key",
        "x-auth-token",
        "x-csrftoken",
        "x-csrf-token",
        "x-xsrf-token",
        "x-amz-security-token",
        "x-auth",
        "x-authorization",
        "authentication",
        "x-authentication",
        "dpop",  # a proof-of-possession JWT (RFC 9449)
        "x-amzn-oidc-data",  # the AWS load balancer's signed claims
    }
)
# Words that name a credential inside a header name: proxies add their own
# (oauth2-proxy's `X-Forwarded-Access-Token`, `X-Auth-Request-Access-Token`),
# so a list of names alone let them through. `X-Auth-Request-User` is not
# refused: a user name is what an actor path is for, and so are the
# identity headers of Google's IAP (`X-Goog-Authenticated-User-Email`) and
# Kong (`X-Authenticated-Userid`). JWTs (`Cf-Access-Jwt-Assertion`) are
# credentials too.
_CREDENTIAL_WORDS = (
    "jwt",
    "apikey",
    "token",
    "secret",
    "password",
    "passwd",
    "cookie",
    "session",
    "credential",
    "signature",
)


# Whole parts of a name (between `-` or `_`) that name a credential: as a
# part, not a word, so `Ocp-Apim-Subscription-Key` and `X-Access-Key` are
# refused while `X-Keycloak-User` and `X-Monkey-Team` are not.
_CREDENTIAL_PARTS = frozenset({"key", "assertion"})


def _carries_credentials(name: str) -> bool:
    lowered = name.lower()
    return (
        lowered in _CREDENTIAL_HEADERS
        or any(w in lowered for w in _CREDENTIAL_WORDS)
        or not _CREDENTIAL_PARTS.isdisjoint(lowered.replace("_", "-").split("-"))
    )


def _header_name(value: object, path: str, errs: f.Collector) -> str | None:
    """The header carrying actor paths: an HTTP header name."""
    name = f.text(value, path, errs)
    if name is None:
        # `text` reads null and "" as unset; this setting has no unset value
        # (null used to be stored, then every enqueue failed on it).
        if value is None or value == "":
            errs.add(path, "must not be empty")
        return None
    if not HEADER_NAME.fullmatch(name):
        errs.add(
            path,
            "must be an HTTP header name (letters, digits and ! # $ % & ' * + - . ^ _ ` | ~, "
            f"at most 100), got {name!r}",
        )
        return None
    if _carries_credentials(name):
        errs.add(
            path,
            f"must not be a header that carries credentials, got {name!r}: its values are "
            "shown to every viewer (queue listings, the inspector, the recording)",
        )
        return None
    return name


def _choice(options: tuple[str, ...]) -> Callable[[object, str, f.Collector], object]:
    def check(value: object, path: str, errs: f.Collector) -> object:
        if value not in options:
            errs.add(path, f"must be one of {', '.join(options)}, got {f.shown(value)}")
            return None
        return value

    return check


# raw key -> (QueueConfig attribute, parser); durations are seconds in the model.
_QUEUE_FIELDS: dict[str, tuple[str, Callable[[object, str, f.Collector], object]]] = {
    "layout": ("layout", _choice(LAYOUTS)),
    "component_selection": ("component_selection", _choice(COMPONENT_SELECTIONS)),
    "max_outstanding_requests_per_tenant": (
        "max_outstanding_requests_per_tenant",
        partial(f.integer, minimum=1),
    ),
    "querier_forget_delay": ("querier_forget_delay", f.duration),
    "priority_aging": ("priority_aging_seconds", f.duration),
    "query_ingesters_within": ("query_ingesters_within", partial(f.duration, positive=True)),
    "query_store_after": ("query_store_after", partial(f.duration, positive=True)),
    "max_queue_hierarchy_levels": ("max_queue_hierarchy_levels", _hierarchy_levels),
    "actor_path_header": ("actor_path_header", _header_name),
    "stuck_threshold": ("stuck_threshold_seconds", partial(f.duration, positive=True)),
    "max_federated_tenants": ("max_federated_tenants", partial(f.integer, minimum=0)),
}


def _queue_changes(
    raw_value: object, base: QueueConfig | None, errs: f.Collector
) -> dict[str, Any]:
    raw = f.mapping(raw_value, "", errs)
    if raw is None:
        return {}
    f.unknown(raw, tuple(_QUEUE_FIELDS), "", errs)
    changes: dict[str, Any] = {}
    for key, (attr, parse) in _QUEUE_FIELDS.items():
        if key in raw:
            before = len(errs.errors)
            value = parse(raw[key], key, errs)
            if len(errs.errors) == before:
                changes[attr] = value
    windows = {"query_ingesters_within", "query_store_after"}
    if (base is not None and windows & changes.keys()) or windows <= changes.keys():
        merged = replace(base or QueueConfig(), **changes)
        if merged.query_store_after >= merged.query_ingesters_within:
            # Mimir rejects this too: some recent data would be on neither component.
            errs.add(
                "query_store_after",
                f"must be less than query_ingesters_within "
                f"({format_duration(merged.query_store_after)} >= "
                f"{format_duration(merged.query_ingesters_within)})",
            )
    return changes


def validate_queue_settings(
    raw: Mapping[str, Any], base: QueueConfig | None = None
) -> list[FieldError]:
    """Every problem in a (possibly partial) scheduler-settings dict.

    With `base`, the keys not given are taken from it for cross-field checks.
    """
    errs = f.Collector()
    _queue_changes(raw, base, errs)
    return errs.errors


def queue_config_from_dict(raw: Mapping[str, Any], base: QueueConfig) -> QueueConfig:
    """`base` with only the given keys changed (PATCH); raises `ConfigInvalid`."""
    errs = f.Collector()
    changes = _queue_changes(raw, base, errs)
    if errs.errors:
        raise ConfigInvalid(errs.errors)
    return replace(base, **changes)


def queue_config_to_dict(cfg: QueueConfig) -> dict[str, Any]:
    """Every scheduler setting in raw form, durations as strings."""
    return {
        "layout": cfg.layout,
        "component_selection": cfg.component_selection,
        "max_outstanding_requests_per_tenant": cfg.max_outstanding_requests_per_tenant,
        "querier_forget_delay": format_duration(cfg.querier_forget_delay),
        "priority_aging": format_duration(cfg.priority_aging_seconds),
        "query_ingesters_within": format_duration(cfg.query_ingesters_within),
        "query_store_after": format_duration(cfg.query_store_after),
        "max_queue_hierarchy_levels": cfg.max_queue_hierarchy_levels,
        "actor_path_header": cfg.actor_path_header,
        "stuck_threshold": format_duration(cfg.stuck_threshold_seconds),
        "max_federated_tenants": cfg.max_federated_tenants,
    }
