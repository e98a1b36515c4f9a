"""The query parameters each REST operation takes, read from its own schema.

A parameter the operation does not take is a 400 naming it
(`ApiView.initial`): `?tenant_id=acme` on a listing that filters by
`tenant` used to answer every tenant's rows with a 200, and a client had
no way to know its filter was never read. The OpenAPI document already
lists every parameter each operation reads (the schema tests and
schemathesis hold it to what the views do), so it is the one list: a
parameter added to a view without its schema entry is refused, which a
test then shows at once.
"""

from __future__ import annotations

import threading

from drf_spectacular.generators import SchemaGenerator

__all__ = ["known_query_params"]

_lock = threading.Lock()
_known: dict[tuple[type, str], frozenset[str]] | None = None


def _build() -> dict[tuple[type, str], frozenset[str]]:
    generator = SchemaGenerator()
    schema = generator.get_schema(request=None, public=True)
    known: dict[tuple[type, str], frozenset[str]] = {}
    # The endpoints the schema was made from (found once, by `get_schema`).
    for path, _regex, method, callback in generator.endpoints:
        operation = schema["paths"].get(path, {}).get(method.lower())
        if operation is None:
            continue
        names = {p["name"] for p in operation.get("parameters", ()) if p["in"] == "query"}
        # One view class may serve several paths: it takes the union.
        key = (callback.cls, method.upper())
        known[key] = known.get(key, frozenset()) | names
    return known


def known_query_params(view: type, method: str) -> frozenset[str] | None:
    """The query parameters `view` takes on `method` (HEAD as GET), or None
    when the schema does not describe that operation (nothing to hold it to).

    The schema is generated once per process, on the first call (about a
    quarter of a second), never at import: the URL conf must be loaded.
    """
    global _known
    if _known is None:
        with _lock:
            if _known is None:
                _known = _build()
    method = "GET" if method.upper() == "HEAD" else method.upper()
    return _known.get((view, method))
