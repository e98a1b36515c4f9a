"""Response negotiation that reads `Accept` quality values of zero.

DRF orders an `Accept` header's media ranges by how specific they are and
reads no `q`: `Accept: application/yaml;q=0, application/json` (YAML
refused) got the runtime-config export as YAML, and
`application/json;q=0` got JSON. RFC 9110 12.5.1: a range with `q=0` is
"not acceptable", and the most specific range naming a type decides
(`application/yaml;q=0, */*` is anything but YAML). So a renderer a
refused range names, with no accepted range at least as specific naming
it, is left out before DRF matches the rest; none left is a 406. (Among
the types accepted DRF's order stands: every endpoint here writes one type,
or JSON and YAML.)
"""

from __future__ import annotations

from typing import Any

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.utils.mediatypes import _MediaType

__all__ = ["QualityNegotiation"]


def _refused(token: str) -> bool:
    """True for a media range whose `q` is zero (`q=0`, `q=0.0`, `q=0.000`)."""
    for param in token.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            value = value.strip()
            return bool(value) and value[0] == "0" and value.strip("0.") == ""
    return False


class QualityNegotiation(DefaultContentNegotiation):
    def select_renderer(
        self, request: Any, renderers: list[Any], format_suffix: str | None = None
    ) -> Any:
        tokens = DefaultContentNegotiation.get_accept_list(self, request)
        refused = [_MediaType(t) for t in tokens if _refused(t)]
        if refused:
            accepted = [_MediaType(t) for t in tokens if not _refused(t)]
            renderers = [r for r in renderers if not _left_out(r, refused, accepted)]
        return super().select_renderer(request, renderers, format_suffix)

    def get_accept_list(self, request: Any) -> list[str]:
        return [token for token in super().get_accept_list(request) if not _refused(token)]


def _left_out(renderer: Any, refused: list[Any], accepted: list[Any]) -> bool:
    own = _MediaType(renderer.media_type)
    worst = max((r.precedence for r in refused if own.match(r)), default=None)
    if worst is None:
        return False
    return max((a.precedence for a in accepted if own.match(a)), default=-1) <= worst
