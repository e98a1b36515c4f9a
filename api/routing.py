"""Websocket routes of the machine-facing app (mounted by `config.asgi`)."""

from __future__ import annotations

from django.conf import settings
from django.urls import path

from api.consumers.frontend import FrontendConsumer
from api.consumers.querier import QuerierConsumer

__all__ = ["websocket_urlpatterns"]

websocket_urlpatterns = [
    path("ws/frontend/", FrontendConsumer.as_asgi()),
    path("ws/querier/", QuerierConsumer.as_asgi()),
]

if getattr(settings, "LOADTEST_RELAY", False):
    from api.consumers.relay import RelayFrontendConsumer, RelayQuerierConsumer

    websocket_urlpatterns += [
        path("ws/relay/frontend/", RelayFrontendConsumer.as_asgi()),
        path("ws/relay/querier/", RelayQuerierConsumer.as_asgi()),
    ]
