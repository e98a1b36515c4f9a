"""URLs of the human-facing pages (all need login; writes need the editor role)."""

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, path

from dashboard import views, views_history, views_rules, views_simulate, views_tenants, views_yaml
from dashboard.login_throttle import ThrottledLoginView

__all__ = ["app_name", "urlpatterns"]

app_name = "dashboard"

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
    path("tenants/new/", views_tenants.tenant_new, name="tenant-new"),
    path("tenants/<str:tenant_id>/", views_tenants.tenant_edit, name="tenant"),
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
