"""App config of the bundled load generator (its management commands)."""

from django.apps import AppConfig

__all__ = ["LoadgenConfig"]


class LoadgenConfig(AppConfig):
    name = "loadgen"
    verbose_name = "Demo load generator"
