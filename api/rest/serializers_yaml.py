"""Shapes of the YAML views' bodies: a tenant's block, a parsed paste, a comparison."""

from __future__ import annotations

from rest_framework import serializers

from api.rest.serializers import ChangeSerializer, RevisionSerializer

__all__ = [
    "BlockParseRequestSerializer",
    "BlockParseSerializer",
    "CompareSerializer",
    "TenantYamlSerializer",
]


class TenantYamlSerializer(serializers.Serializer):  # type: ignore[type-arg]
    tenant_id = serializers.CharField()
    version = serializers.IntegerField()
    yaml = serializers.CharField(
        help_text="the tenant's block exactly as under overrides: in the runtime-config export, "
        "one level less indented, with its tenant key line"
    )


class BlockParseRequestSerializer(serializers.Serializer):  # type: ignore[type-arg]
    yaml = serializers.CharField(
        allow_blank=True,
        trim_whitespace=False,
        help_text="one tenant's block, with or without its tenant key line (or under overrides:)",
    )


class LocatedErrorSerializer(serializers.Serializer):  # type: ignore[type-arg]
    path = serializers.CharField(help_text="the validator's field path; (yaml) for a syntax error")
    message = serializers.CharField()
    line = serializers.IntegerField(allow_null=True, help_text="1-based line in the text sent")


class LocatedNameSerializer(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)


class BlockParseSerializer(serializers.Serializer):  # type: ignore[type-arg]
    tenant_id = serializers.CharField()
    pasted_tenant = serializers.CharField(
        allow_null=True, help_text="the ID on the block's own key line, when it had one"
    )
    valid = serializers.BooleanField()
    config = serializers.JSONField(
        allow_null=True, help_text="the tenant body the scheduler would store (a PUT body)"
    )
    ignored = LocatedNameSerializer(
        many=True, help_text="Cortex limits not used here: never saved, always reported"
    )
    errors = LocatedErrorSerializer(many=True)
    yaml = serializers.CharField(
        allow_blank=True, help_text="the body as the export would write it ('' when invalid YAML)"
    )


class ScopeSerializer(serializers.Serializer):  # type: ignore[type-arg]
    kind = serializers.ChoiceField(choices=["tenant", "settings", "overrides", "config"])
    key = serializers.CharField(help_text="the tenant ID for kind tenant, else empty")
    label = serializers.CharField()


class CompareSerializer(serializers.Serializer):  # type: ignore[type-arg]
    from_ = RevisionSerializer(help_text="the revision whose after-state is the old side")
    to = RevisionSerializer(help_text="the revision whose after-state is the new side")
    scope = ScopeSerializer()
    diff = ChangeSerializer(many=True)
    yaml_diff = serializers.CharField(help_text="unified diff of the two states' YAML")

    def get_fields(self) -> dict[str, serializers.Field]:  # type: ignore[type-arg]
        # `from` is a Python keyword: declared as from_, named from on the wire.
        return {
            ("from" if name == "from_" else name): field
            for name, field in super().get_fields().items()
        }
