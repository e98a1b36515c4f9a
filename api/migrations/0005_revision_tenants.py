"""Which tenants each revision changed (`RevisionTenant`), filled for the history so far.

The rows of revisions written before this migration are worked out from
their before and after as the writer works them out (`changed_tenants`).
"""

import django.db.models.deletion
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from api.store.revision_tenants import changed_tenants

# Revisions read at a time: an import's before and after are whole tenant sets.
_BATCH = 200


def fill_revision_tenants(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    revisions = apps.get_model("api", "ConfigRevision").objects.order_by("pk")
    row = apps.get_model("api", "RevisionTenant")
    for revision in revisions.iterator(chunk_size=_BATCH):
        tenants = changed_tenants(revision.kind, revision.key, revision.before, revision.after)
        row.objects.bulk_create(
            [row(revision_id=revision.pk, tenant_id=tenant) for tenant in tenants],
            batch_size=500,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("api", "0004_apitoken_expires_at"),
    ]

    operations = [
        migrations.CreateModel(
            name="RevisionTenant",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("tenant_id", models.CharField(max_length=256)),
                (
                    "revision",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="tenants_changed",
                        to="api.configrevision",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["tenant_id"], name="api_revisio_tenant__0450b7_idx")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("revision", "tenant_id"), name="revision_tenant_once"
                    )
                ],
            },
        ),
        migrations.RunPython(fill_revision_tenants, migrations.RunPython.noop),
    ]
