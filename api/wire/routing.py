"""Websocket routes of the machine-facing app (mounted by `config.asgi`)."""

from __future__ import annotations

from django.conf import settings
from django.urls import path

from api.wire.consumers.frontend import FrontendConsumer
from api.wire.consumers.querier import QuerierConsumer

__all__ = ["websocket_urlpatterns"]

websocket_urlpatterns = [
    path("ws/frontend/", FrontendConsumer.as_asgi()),
    path("ws/querier/", QuerierConsumer.as_asgi()),
]


if settings.LOADTEST_RELAY:
    from api.wire.consumers.relay import RelayFrontendConsumer, RelayQuerierConsumer

    websocket_urlpatterns += [
        path("ws/relay/frontend/", RelayFrontendConsumer.as_asgi()),
        path("ws/relay/querier/", RelayQuerierConsumer.as_asgi()),
    ]
