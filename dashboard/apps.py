"""App config of the human-facing app."""

from django.apps import AppConfig

__all__ = ["DashboardConfig"]


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Dashboard"
    default_auto_field = "django.db.models.BigAutoField"
