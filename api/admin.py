"""Admin pages for the config store.

The admin saves nothing itself: every change goes through `api.store.services`
(source "admin"), so it is validated, versioned and recorded like any other.
Forms validate with the same functions first, so errors show next to the
field instead of failing on save, and carry the version the editor loaded so
a concurrent change is reported rather than overwritten.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html_join

from api.store import selectors, services
from api.store.exceptions import ConfigStoreError, ConfigValidationError
from api.store.import_plan import validate_tenant
from api.store.models import ApiToken, ConfigRevision, SchedulerSettings, Tenant
from api.store.roles import EDITOR, role_of
from api.store.tokens import TokenExpiryError, api_token_expiry_check, token_name_error
from scheduler_core.model import QueueConfig
from scheduler_core.queue_settings import queue_config_to_dict
from scheduler_core.validation import validate_queue_settings

__all__ = [
    "ApiTokenAdmin",
    "ConfigRevisionAdmin",
    "RoleBoundGroupAdmin",
    "RoleBoundUserAdmin",
    "SchedulerSettingsAdmin",
    "TenantAdmin",
]

ADMIN = ConfigRevision.Source.ADMIN


class _RoleBoundAdmin(admin.ModelAdmin):
    """An admin that answers to the viewer/editor roles as the pages and REST do.

    Django's model permissions come on top: an account needs both. Alone,
    they let a staff account without a role, given `add_apitoken` by a
    superuser, mint an editor token; and one given only the view permission
    roll the config back and revoke tokens, through actions that asked for
    no permission. Superusers are editors (`role_of`).
    """

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return role_of(request.user) is not None and super().has_view_permission(request, obj)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return role_of(request.user) is not None and super().has_module_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return role_of(request.user) == EDITOR and super().has_add_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return role_of(request.user) == EDITOR and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return role_of(request.user) == EDITOR and super().has_delete_permission(request, obj)

    def has_editor_permission(self, request: HttpRequest) -> bool:
        """For actions that write through the services (`permissions=["editor"]`)."""
        return role_of(request.user) == EDITOR


# Roles are the groups "viewer" and "editor": an account that may edit users
# or groups may make anyone an editor, itself included, so Django's own
# pages for them answer to the roles too.
admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class RoleBoundUserAdmin(_RoleBoundAdmin, UserAdmin):
    """Django's user pages; changing a user (its groups: its role) needs the editor role."""


@admin.register(Group)
class RoleBoundGroupAdmin(_RoleBoundAdmin, GroupAdmin):
    """Django's group pages, under the same rule."""


class _ServiceWritesAdmin(_RoleBoundAdmin):
    """An admin whose saves go through the config store's services.

    The form checks the version it was loaded at (and a new tenant's ID)
    outside the store's lock; the service checks again under it. A writer
    that got in between (another admin, REST, another replica) made the
    service refuse, and the page was a 500. The view's transaction rolled
    back: nothing was saved, and the form is shown again as it was posted,
    with why on it (a redirect to the page lost what the operator typed).
    """

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ConfigStoreError as exc:
            if request.method != "POST":
                return self.refused(request, "Not saved", exc)
            # Run again, the form fails on the refusal (`get_form`), so the
            # admin shows the post back with it and writes nothing.
            request.store_refusal = exc  # type: ignore[attr-defined]
            return super().changeform_view(request, object_id, form_url, extra_context)

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        refusal = getattr(request, "store_refusal", None)
        if refusal is None:
            return form

        class Refused(form):  # type: ignore[misc, valid-type]
            def clean(self) -> dict[str, Any]:
                super().clean()
                raise forms.ValidationError(f"Not saved: {refusal}")

        return Refused

    def refused(self, request: HttpRequest, what: str, exc: ConfigStoreError) -> HttpResponse:
        """The page again (as it is now), with what was not done and why."""
        self.message_user(request, f"{what}: {exc}", messages.ERROR)
        return HttpResponseRedirect(request.path)


def _errors_to_form(form: forms.ModelForm[Any], exc: ConfigValidationError) -> None:
    for error in exc.errors:
        field = "tenant_id" if error.path == "tenant_id" else "config"
        form.add_error(field, f"{error.path}: {error.message}")


class _VersionedForm(forms.ModelForm):
    """A form that remembers which version the editor was looking at."""

    expected_version = forms.IntegerField(widget=forms.HiddenInput, required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            field = self.fields["expected_version"]
            field.initial = self.instance.version
            # Without it a change was saved over whatever was there: the
            # version read at the POST stood in for the one the editor saw.
            field.required = True
            field.error_messages["required"] = (
                "this form lacks the version it was loaded at; reload the page and edit again"
            )

    def check_version(self, current: int) -> None:
        expected = self.cleaned_data.get("expected_version")
        if self.instance.pk is not None and expected is not None and expected != current:
            raise forms.ValidationError(
                f"Someone else changed this (now version {current}); reload and edit again."
            )


class TenantForm(_VersionedForm):
    class Meta:
        model = Tenant
        fields = ["tenant_id", "config"]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        tenant_id = data.get("tenant_id") or self.instance.tenant_id
        if "config" in data:
            try:
                validate_tenant(tenant_id, data["config"])
            except ConfigValidationError as exc:
                _errors_to_form(self, exc)
        if self.instance.pk is not None:
            current = Tenant.objects.filter(pk=self.instance.pk).values_list("version", flat=True)
            self.check_version(current.first() or 0)
        return data


@admin.register(Tenant)
class TenantAdmin(_ServiceWritesAdmin):
    form = TenantForm
    actions = ["delete_tenants"]
    list_display = ["tenant_id", "version", "updated_at"]
    search_fields = ["tenant_id"]
    readonly_fields = ["version", "created_at", "updated_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # Renaming would orphan the tenant's revisions; delete and re-create instead.
        return [*self.readonly_fields, "tenant_id"] if obj is not None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: Tenant, form: Any, change: bool) -> None:
        expected = form.cleaned_data.get("expected_version") if change else None
        saved = services.tenant_put(
            tenant_id=obj.tenant_id,
            config=obj.config,
            expected_version=expected,
            author=request.user,
            source=ADMIN,
        )
        obj.pk, obj.version = saved.pk, saved.version

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        # Django's own bulk delete confirms without versions; `delete_tenants` carries them.
        actions.pop("delete_selected", None)
        return actions

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        try:
            return super().delete_view(request, object_id, extra_context)
        except ConfigStoreError as exc:
            # The page shown again carries the current version.
            return self.refused(request, "Not deleted", exc)

    def delete_model(self, request: HttpRequest, obj: Tenant) -> None:
        # Without the version the confirmation was shown at, a change made
        # meanwhile was deleted unseen (as if If-Match were `*`).
        services.tenant_delete(
            tenant_id=obj.tenant_id,
            expected_version=_shown_version(request, "expected_version"),
            author=request.user,
            source=ADMIN,
        )

    @admin.action(description="Delete the selected tenants", permissions=["delete"])
    def delete_tenants(
        self, request: HttpRequest, queryset: QuerySet[Tenant]
    ) -> TemplateResponse | None:
        tenants = list(queryset.order_by("tenant_id"))
        if not request.POST.get("post"):
            context = {
                **self.admin_site.each_context(request),
                "title": "Delete tenants",
                "opts": self.opts,
                "tenants": tenants,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            }
            template = "admin/api/tenant/delete_selected_confirmation.html"
            return TemplateResponse(request, template, context)
        tenant_id = ""
        try:
            # All or none: half a bulk delete is a config nobody chose.
            with transaction.atomic():
                for tenant in tenants:
                    tenant_id = tenant.tenant_id
                    services.tenant_delete(
                        tenant_id=tenant_id,
                        expected_version=_shown_version(request, f"version_{tenant.pk}"),
                        author=request.user,
                        source=ADMIN,
                    )
        except ConfigStoreError as exc:
            self.message_user(request, f"Nothing deleted: {tenant_id}: {exc}", messages.ERROR)
            return None
        self.message_user(request, f"Deleted {len(tenants)} tenant(s).")
        return None


def _shown_version(request: HttpRequest, field: str) -> int:
    """The version a delete confirmation showed, from its hidden `field`."""
    try:
        return int(request.POST[field])
    except (KeyError, ValueError):
        raise ConfigStoreError(
            "this confirmation lacks the version it was shown at; go back and delete again"
        ) from None


class SchedulerSettingsForm(_VersionedForm):
    """The whole settings document: a setting left out is set to its default.

    The service takes changes (a PATCH); read as one here, a setting deleted
    from the text was silently kept at its old value.
    """

    class Meta:
        model = SchedulerSettings
        fields = ["config"]
        help_texts = {"config": "Every scheduler setting; one left out is set to its default."}

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        config = data.get("config")
        if isinstance(config, dict):
            for error in validate_queue_settings(config, QueueConfig()):
                self.add_error("config", f"{error.path}: {error.message}")
        elif "config" in data:
            self.add_error("config", "must be a mapping of settings")
        self.check_version(selectors.settings_get().version)
        return data


@admin.register(SchedulerSettings)
class SchedulerSettingsAdmin(_ServiceWritesAdmin):
    form = SchedulerSettingsForm
    list_display = ["__str__", "version", "updated_at"]
    readonly_fields = ["version", "config_version", "updated_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(
        self, request: HttpRequest, obj: SchedulerSettings, form: Any, change: bool
    ) -> None:
        saved = services.settings_update(
            changes={**queue_config_to_dict(QueueConfig()), **obj.config},
            expected_version=form.cleaned_data.get("expected_version"),
            author=request.user,
            source=ADMIN,
        )
        obj.config, obj.version, obj.config_version = (
            saved.config,
            saved.version,
            saved.config_version,
        )


@admin.register(ConfigRevision)
class ConfigRevisionAdmin(_RoleBoundAdmin):
    list_display = ["version", "created_at", "kind", "key", "source", "author_name", "message"]
    list_filter = ["kind", "source"]
    search_fields = ["key", "author_name", "message"]
    readonly_fields = [
        "version",
        "created_at",
        "kind",
        "key",
        "source",
        "author",
        "author_name",
        "message",
        "changes",
        "before",
        "after",
    ]
    fields = readonly_fields
    actions = ["roll_back"]

    @admin.display(description="changes")
    def changes(self, obj: ConfigRevision) -> str:
        rows = ((c.path, repr(c.before), repr(c.after)) for c in selectors.revision_diff(obj))
        return format_html_join("\n", "<div><code>{}</code>: {} → {}</div>", rows)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(
        description="Roll back the selected revisions (newest first)", permissions=["editor"]
    )
    def roll_back(self, request: HttpRequest, queryset: QuerySet[ConfigRevision]) -> None:
        for revision in queryset.order_by("-version"):
            try:
                new = services.revision_rollback(
                    revision_id=revision.pk, author=request.user, source=ADMIN
                )
            except ConfigStoreError as exc:
                self.message_user(request, f"#{revision.version}: {exc}", messages.ERROR)
                continue
            outcome = f"new revision #{new.version}" if new else "already in that state"
            self.message_user(request, f"Rolled back #{revision.version}: {outcome}")


class ApiTokenForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["name", "role", "expires_at"]

    def clean_name(self) -> str:
        # Checked here, beside the field: on save, `api_token_issue`'s refusal was a 500.
        name: str = self.cleaned_data["name"]
        refused = token_name_error(name)
        if refused is not None:
            raise forms.ValidationError(refused)
        return name

    def clean_expires_at(self) -> Any:
        expires_at = self.cleaned_data.get("expires_at")
        if expires_at is None:
            return None
        try:
            return api_token_expiry_check(expires_at)
        except TokenExpiryError as exc:
            raise forms.ValidationError(str(exc)) from exc


class TokenStateFilter(admin.SimpleListFilter):
    """Live, expired or revoked, as `ApiToken.state` tells them apart."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("live", "live"), ("expired", "expired"), ("revoked", "revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> QuerySet[ApiToken]:
        if self.value() == "live":
            return queryset.live(timezone.now())
        if self.value() == "expired":
            return queryset.expired(timezone.now())
        if self.value() == "revoked":
            return queryset.filter(revoked=True)
        return queryset


@admin.register(ApiToken)
class ApiTokenAdmin(_RoleBoundAdmin):
    form = ApiTokenForm
    list_display = [
        "name",
        "role",
        "prefix",
        "created_at",
        "last_used_at",
        "revoked",
        "expires_at",
        "state",
    ]
    list_filter = ["role", "revoked", TokenStateFilter]
    search_fields = ["name", "prefix"]
    actions = ["revoke"]

    @admin.display(description="state")
    def state(self, obj: ApiToken) -> str:
        return obj.state(timezone.now())

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return []
        fields = ["name", "role", "prefix", "created_at", "last_used_at", "revoked"]
        return [*fields, "expires_at", "state"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return ["name", "role", "expires_at"]
        return self.get_readonly_fields(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Revoke instead, so revisions and logs can still name the token.
        return False

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        if change:
            return
        token, plaintext = services.api_token_issue(
            name=obj.name, role=obj.role, expires_at=obj.expires_at
        )
        obj.pk = token.pk
        request._issued_token = plaintext  # type: ignore[attr-defined]  # for response_add

    def response_add(
        self, request: HttpRequest, obj: ApiToken, post_url_continue: str | None = None
    ) -> HttpResponse:
        """The plaintext on a page of its own, kept out of caches.

        It used to be a message: Django keeps messages in a cookie by
        default, signed but not encrypted, so the token crossed the network
        twice more and sat in any proxy log of cookies.
        """
        plaintext = getattr(request, "_issued_token", None)
        if plaintext is None:
            return super().response_add(request, obj, post_url_continue)
        context = {
            **self.admin_site.each_context(request),
            "token": ApiToken.objects.get(pk=obj.pk),
            "plaintext": plaintext,
            "changelist_url": reverse("admin:api_apitoken_changelist"),
            "title": "Token issued",
        }
        # The admin's views are never cached (`no-store`), this answer with them.
        return TemplateResponse(request, "admin/api/apitoken/issued.html", context)

    @admin.action(description="Revoke the selected tokens", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for token in queryset:
            services.api_token_revoke(token_id=token.pk)
        self.message_user(request, f"Revoked {queryset.count()} token(s).")
