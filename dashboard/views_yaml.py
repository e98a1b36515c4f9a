"""The tenant editor's live YAML check: what a typed block means, by line (JSON).

The YAML view's script posts the text after each pause in typing; the answer
is the same `api.store.config_yaml.parse_tenant_block` the editor's posts
use, so the gutter shows what Save would report.
"""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_POST

from api.store.config_yaml import parse_tenant_block
from dashboard.access import role_required

__all__ = ["yaml_check"]


@require_POST
@role_required
def yaml_check(request: HttpRequest) -> JsonResponse:
    """The YAML view's live check (JSON): problems and unused limits of the text, by line."""
    parsed = parse_tenant_block(request.POST.get("yaml", ""))
    return JsonResponse(
        {
            "errors": [
                {"path": p.path, "message": p.message, "line": p.line} for p in parsed.problems
            ],
            "ignored": [{"name": n.name, "line": n.line} for n in parsed.ignored],
            "pasted_tenant": parsed.pasted_tenant,
        }
    )
