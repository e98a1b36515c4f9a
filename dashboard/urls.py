"""URLs of the human-facing pages (all need login; writes need the editor role)."""

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, path, register_converter

from dashboard import views, views_history, views_rules, views_simulate, views_tenants, views_yaml
from dashboard.login_throttle import ThrottledLoginView

__all__ = ["app_name", "urlpatterns"]

app_name = "dashboard"


class _EditorTenant:
    """A tenant ID as its editor's short address, `/tenants/<id>/`: any but "new".

    `/tenants/new/` is the creation page, so a tenant named "new" (a valid
    Cortex org ID) had no editor a link could reach. Reversing "dashboard:tenant"
    for it skips this address (`to_url` refuses) and gives the long one,
    `/tenants/new/edit/`, which every tenant also has.
    """

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        if value == "new":
            raise ValueError("the creation page's address")
        return value


register_converter(_EditorTenant, "editor_tenant")

urlpatterns: list[URLPattern | URLResolver] = [
    path(
        "login/",
        ThrottledLoginView.as_view(template_name="login.html", redirect_authenticated_user=True),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(next_page="/login/?logged_out=1"), name="logout"),
    path("", views.inspector, name="inspector"),
    path("layout/", views.layout_switch, name="layout"),
    path("tenants/", views_tenants.tenants, name="tenants"),
    # Reverse tries same-named patterns last first: the short address, then
    # the long one for the ID the short one refuses.
    path("tenants/<str:tenant_id>/edit/", views_tenants.tenant_edit, name="tenant"),
    path("tenants/new/", views_tenants.tenant_new, name="tenant-new"),
    path("tenants/<editor_tenant:tenant_id>/", views_tenants.tenant_edit, name="tenant"),
    path("tenants/<str:tenant_id>/explain/", views_tenants.explain, name="explain"),
    path("tenants/<str:tenant_id>/dry-run/", views_rules.dry_run, name="dry-run"),
    path("tenants/<str:tenant_id>/delete/", views_tenants.tenant_delete, name="tenant-delete"),
    path("yaml-check/", views_yaml.yaml_check, name="yaml-check"),
    path("history/", views.history, name="history"),
    path("history/compare/", views_history.compare, name="history-compare"),
    path("history/<int:revision_id>/rollback/", views.rollback, name="rollback"),
    path("settings/", views.settings_page, name="settings"),
    path("simulate/", views_simulate.simulate, name="simulate"),
]
