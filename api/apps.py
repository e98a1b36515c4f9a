"""App config of the machine-facing app."""

from django.apps import AppConfig

__all__ = ["ApiConfig"]


class ApiConfig(AppConfig):
    name = "api"
    verbose_name = "Scheduler config"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from api.store.exceptions import classify_sqlite_faults

        # Before any connection is made: SQLite's statement faults are 500s.
        connection_created.connect(classify_sqlite_faults, dispatch_uid="classify_sqlite_faults")
