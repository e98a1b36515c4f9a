"""URLs of the machine-facing app (health now; the REST API joins under /api/v1/)."""

from django.urls import include, path

from api.wire.health import healthz
from api.wire.metrics import metrics_view

__all__ = ["urlpatterns"]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics_view, name="metrics"),
    path("api/v1/", include("api.rest.urls")),
]
