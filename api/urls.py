"""URLs of the machine-facing app (health now; the REST API joins under /api/v1/)."""

from django.urls import path

from api.views_health import healthz

__all__ = ["urlpatterns"]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
]
