"""Liveness endpoint, open to everyone so load balancers and `make serve` can poll it."""

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe

__all__ = ["healthz"]


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Answers as soon as the process serves HTTP; it touches no database."""
    return JsonResponse({"status": "ok"})
