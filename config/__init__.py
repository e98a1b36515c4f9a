"""The Django project: settings, URL routing, the ASGI entry point, and how
Daphne is started (`serve`: the event loop, the schema check, the
websocket slow-reader guard, `slow_readers`, and the access log without
query-string secrets, `access_log`), each HTTP response freed as its
request ends (`http_cycles`), connections a client reset ended and Daphne's
reaper kept running (`dead_connections`), and the signing key kept in VAR_DIR
when `SECRET_KEY` is unset (`secret_key`). May import every other package."""
