"""The Django project: settings, URL routing, the ASGI entry point, and how
Daphne is started (`serve`: the event loop, the schema check, and the
websocket slow-reader guard, `slow_readers`). May import every other package."""
