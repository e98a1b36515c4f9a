"""App config of the machine-facing app."""

from django.apps import AppConfig

__all__ = ["ApiConfig"]


class ApiConfig(AppConfig):
    name = "api"
    verbose_name = "Scheduler config"
    default_auto_field = "django.db.models.BigAutoField"
