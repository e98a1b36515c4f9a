"""Top-level URL routing: admin, health, and the two apps' own URL files."""

from django.contrib import admin
from django.urls import include, path

__all__ = ["urlpatterns"]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("api.urls")),
    path("", include("dashboard.urls")),
]
