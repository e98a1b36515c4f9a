"""App config of the human-facing app."""

from django.apps import AppConfig

__all__ = ["DashboardConfig"]


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Dashboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Login throttling: its signal receivers, and the admin's login form
        # (the login page's is set in urls.py).
        from django.contrib import admin

        from api.wire.loop_metrics import register_loop_bound
        from api.wire.metrics import REGISTRY
        from dashboard import login_throttle
        from dashboard.live_metrics import LiveViewsCollector

        admin.site.login_form = login_throttle.ThrottledAdminAuthenticationForm
        # What the inspector costs, beside the scheduler's own series.
        register_loop_bound(REGISTRY, LiveViewsCollector())
