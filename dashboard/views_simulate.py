"""The Simulate page: the live config beside a proposed one, on the same workload and seed.

The page itself only renders; the run is the REST API's (`POST
/api/v1/simulate/`), called by the page's script with the session. It opens
empty from the menu, or with a proposal carried from another page's unsaved
form, which posts here (never saving anything):
- the tenant editor's "Simulate this change": the whole draft tenant block
  of the view it was pressed in, form or YAML
  (`dashboard.tenant_draft.draft_from_post`), as `proposed.tenants.<id>`;
- the settings page's "Simulate switching layout / component selection":
  the settings that differ from the live ones, as `proposed.settings`.
Viewers may use it: it changes nothing.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse

from api.store import selectors
from dashboard.access import page, role_required
from dashboard.forms import settings_from_post
from dashboard.tenant_draft import draft_from_post
from scheduler_core.model import COMPONENT_SELECTIONS, COMPONENTS, LAYOUTS
from scheduler_core.validation import queue_config_to_dict
from scheduler_core.whatif_scenarios import SCENARIO_NAMES

__all__ = ["simulate"]

WINDOWS = ((300, "last 5 minutes"), (900, "last 15 minutes"), (3600, "last 60 minutes"))


def _carried(request: HttpRequest, live: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The proposal a posting page carried, and a line saying where it came from."""
    origin = request.POST.get("simulate_from", "")
    if origin == "settings":
        changed = {
            key: value
            for key, value in settings_from_post(request.POST).items()
            if str(live.get(key)) != str(value)
        }
        return {"settings": changed, "tenants": {}}, "the unsaved settings form"
    if origin.startswith("tenant"):
        tenant_id = request.POST.get("tenant_id", "").strip() or origin.partition(":")[2]
        if tenant_id:
            # The draft of whichever view posted: the YAML view has no form
            # inputs, and read as a form its draft was an empty rule set.
            draft = draft_from_post(request.POST).config
            if draft is None:
                return {"settings": {}, "tenants": {}}, (
                    f"the unsaved editor of tenant {tenant_id} (nothing: its YAML is no tenant "
                    "block; fix it there first)"
                )
            carried = {"settings": {}, "tenants": {tenant_id: draft}}
            # A viewer's read-only editor (or an editor's untouched one)
            # carries the saved block itself: said so, or the page would
            # promise a change that simulates as none.
            if selectors.tenant_configs([tenant_id]).get(tenant_id) == draft:
                return carried, (
                    f"tenant {tenant_id}'s saved block, unchanged: change it under Proposed to "
                    "simulate a change"
                )
            return carried, f"the unsaved editor of tenant {tenant_id}"
    return {"settings": {}, "tenants": {}}, ""


@role_required
def simulate(request: HttpRequest) -> HttpResponse:
    """The page; a POST only pre-fills the proposal (nothing is saved)."""
    live = queue_config_to_dict(selectors.queue_config_get())
    proposal: dict[str, Any] = {"settings": {}, "tenants": {}}
    origin = ""
    if request.method == "POST":
        proposal, origin = _carried(request, live)
    # The live side of what the proposal changes: beside a tenant's draft,
    # the block it would replace (none for a tenant not saved yet).
    stored = selectors.tenant_configs(list(proposal["tenants"]))
    context = {
        "live_view": {"settings": live, "tenants": stored},
        "proposal": proposal,
        "origin": origin,
        "windows": WINDOWS,
        "scenarios": SCENARIO_NAMES,
        "components": COMPONENTS,
        "layouts": LAYOUTS,
        "selections": COMPONENT_SELECTIONS,
    }
    return page(request, "dashboard/simulate.html", context)
