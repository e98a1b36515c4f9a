"""The Django project: settings, URL routing and the ASGI entry point only."""
