"""URLs of the machine-facing app (health now; the REST API joins under /api/v1/)."""

from django.urls import include, path

from api.views_health import healthz

__all__ = ["urlpatterns"]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("api/v1/", include("api.api_urls")),
]
