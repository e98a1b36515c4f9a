"""The api app's migrations: in step with the models, and the token expiry keeps old tokens."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from api.store.services import api_token_authenticate
from api.store.tokens import _token_hash

BEFORE_EXPIRY = ("api", "0003_operator_cancel")
EXPIRY = ("api", "0004_apitoken_expires_at")


@pytest.mark.django_db
def test_the_models_need_no_migration_the_tree_does_not_have() -> None:
    out = StringIO()
    call_command("makemigrations", "api", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_a_token_issued_before_expiries_existed_never_expires_after_the_migration() -> None:
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("api")
    executor.migrate([BEFORE_EXPIRY])
    try:
        old_apps = executor.loader.project_state([BEFORE_EXPIRY]).apps
        plaintext = "qi_issued-before-expiries"
        old_apps.get_model("api", "ApiToken").objects.create(
            name="old", role="querier", token_hash=_token_hash(plaintext), prefix=plaintext[:8]
        )
        executor = MigrationExecutor(connection)  # reads the applied set again
        executor.migrate([EXPIRY])
        token = api_token_authenticate(plaintext)
        assert token is not None and token.expires_at is None
    finally:
        MigrationExecutor(connection).migrate(latest)


@pytest.mark.django_db(transaction=True)
def test_the_revisions_before_revision_tenants_get_theirs_from_the_migration() -> None:
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("api")
    executor.migrate([EXPIRY])
    try:
        old_apps = executor.loader.project_state([EXPIRY]).apps
        revision = old_apps.get_model("api", "ConfigRevision").objects
        revision.create(kind="tenant", key="acme", after={}, version=901, source="api")
        revision.create(
            kind="runtime-config",
            key="",
            before={"acme": {}, "gone": {}},
            after={"acme": {}, "new": {"max_queriers_per_tenant": 1}},
            version=902,
            source="yaml",
        )
        executor = MigrationExecutor(connection)  # reads the applied set again
        executor.migrate([("api", "0005_revision_tenants")])
        rows = executor.loader.project_state([("api", "0005_revision_tenants")]).apps
        found = rows.get_model("api", "RevisionTenant").objects.order_by("tenant_id")
        assert sorted(found.values_list("revision__version", "tenant_id")) == [
            (901, "acme"),
            (902, "gone"),
            (902, "new"),
        ]
    finally:
        MigrationExecutor(connection).migrate(latest)
