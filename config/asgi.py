"""ASGI entry point: routes HTTP to Django.

The runtime host (websocket routes and the lazily started scheduler) is
built on top of this routing by the service layer.
"""

import os

from channels.routing import ProtocolTypeRouter
from django.core.asgi import get_asgi_application

__all__ = ["application"]

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# Django must be set up before anything imports models, hence this order.
django_asgi_app = get_asgi_application()

application = ProtocolTypeRouter({"http": django_asgi_app})
