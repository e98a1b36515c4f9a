"""ASGI entry point: routes HTTP to Django, with static files served in-process.

The runtime host (websocket routes and the lazily started scheduler) is
built on top of this routing by the service layer.
"""

import os

from channels.routing import ProtocolTypeRouter
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

__all__ = ["application"]

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# Django must be set up before anything imports models, hence this order.
# Daphne serves /static/ itself (there is no separate web server in the
# embedded setup), so pages and the admin work offline with DEBUG off.
django_asgi_app = ASGIStaticFilesHandler(get_asgi_application())

application = ProtocolTypeRouter({"http": django_asgi_app})
