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

        from api.wire import runtime_host
        from api.wire.loop_metrics import register_loop_bound
        from api.wire.metrics import REGISTRY
        from dashboard import login_throttle
        from dashboard.live import keep_history
        from dashboard.live_metrics import LiveViewsCollector

        admin.site.login_form = login_throttle.ThrottledAdminAuthenticationForm
        # What the inspector costs, beside the scheduler's own series.
        register_loop_bound(REGISTRY, LiveViewsCollector())
        # The inspector's charts show the last minutes on opening, watched or not.
        runtime_host.add_background("inspector chart history", keep_history)
