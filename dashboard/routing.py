"""Websocket routes of the human-facing app (mounted by config.asgi)."""

from django.urls import path

from dashboard.consumers import InspectorConsumer

__all__ = ["websocket_urlpatterns"]

websocket_urlpatterns = [
    path("ws/inspector/", InspectorConsumer.as_asgi()),
]
