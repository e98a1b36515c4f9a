"""URLs of the machine-facing app (health now; the REST API joins under /api/v1/)."""

from django.urls import include, path

from api.metrics import metrics_view
from api.views_health import healthz

__all__ = ["urlpatterns"]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics_view, name="metrics"),
    path("api/v1/", include("api.api_urls")),
]
