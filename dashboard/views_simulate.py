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
Viewers may use it: it changes nothing. A carried proposal comes with the
way back to where it came from: for an editor, the page given its draft
again (a post, as the tenant editor's own buttons carry drafts and as the
settings page takes its own back, `dashboard.settings_view.DRAFT`;
`simulate_back.js` sends the proposal as edited here when it was), for a
viewer, who has no draft, a link to the page.

Each recent window is offered with what this replica's recorder holds for
it now (`TrafficRecorder.extent`): how long until any recorded time lies
before it, so "Proposed starts from" says before a run when there is no
warm-up to start from (both sides start from an empty queue) and the
script enables it when there is.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from api.store import selectors
from api.store.import_plan import tenant_id_errors
from api.store.roles import EDITOR
from api.wire import runtime_host, traffic_recording
from dashboard.access import page, role_required
from dashboard.forms import SETTINGS_FIELDS, settings_from_post
from dashboard.settings_view import DRAFT
from dashboard.tenant_draft import YAML, Draft, draft_from_post, yaml_for
from scheduler_core.model import COMPONENT_SELECTIONS, COMPONENTS, LAYOUTS
from scheduler_core.validation import queue_config_to_dict
from scheduler_core.whatif_model import START_FROM_LIVE, START_FROM_PROPOSAL
from scheduler_core.whatif_scenarios import SCENARIO_KNOBS, SCENARIO_NAMES

__all__ = ["simulate"]

WINDOWS = ((300, "last 5 minutes"), (900, "last 15 minutes"), (3600, "last 60 minutes"))
# `knobs.start_from`, the API's default first (the page's default).
START_FROM_CHOICES = (
    (START_FROM_PROPOSAL, "its own backlog (as if applied long ago)"),
    (START_FROM_LIVE, "the live backlog (apply now)"),
)


class _Carried(NamedTuple):
    """What a posting page carried: the proposal, a line saying where it came from,
    the way back there (`_back_to_tenant`, `_back_to_settings`; None: nowhere to
    go back to), and the saved blocks of the tenants it proposes (the live side
    beside them)."""

    proposal: dict[str, Any]
    origin: str
    back: dict[str, Any] | None
    stored: dict[str, Any]


def _nothing(origin: str = "", back: dict[str, Any] | None = None) -> _Carried:
    """No proposal (a page opened afresh, or a draft that is no tenant block)."""
    return _Carried({"settings": {}, "tenants": {}}, origin, back, {})


def _carried(request: HttpRequest, live: dict[str, Any]) -> _Carried:
    """What the posting page carried (see `_Carried`)."""
    origin = request.POST.get("simulate_from", "")
    if origin == "settings":
        changed = {
            key: value
            for key, value in settings_from_post(request.POST).items()
            if str(live.get(key)) != str(value)
        }
        back = _back_to_settings(request)
        return _Carried({"settings": changed, "tenants": {}}, "the unsaved settings form", back, {})
    if origin.startswith("tenant"):
        tenant_id = request.POST.get("tenant_id", "").strip() or origin.partition(":")[2]
        if tenant_id:
            # The draft of whichever view posted: the YAML view has no form
            # inputs, and read as a form its draft was an empty rule set.
            posted = draft_from_post(request.POST)
            draft = posted.config
            # One read of the saved block, for the way back, the origin line
            # and the live side shown beside the draft.
            saved_blocks = selectors.tenant_configs([tenant_id])
            back = _back_to_tenant(request, tenant_id, posted, tenant_id in saved_blocks)
            if draft is None:
                return _nothing(
                    f"the unsaved editor of tenant {tenant_id} (nothing: its YAML is no tenant "
                    "block; fix it there first)",
                    back,
                )
            carried = {"settings": {}, "tenants": {tenant_id: draft}}
            # A viewer's read-only editor (or an editor's untouched one)
            # carries the saved block itself: said so, or the page would
            # promise a change that simulates as none.
            if saved_blocks.get(tenant_id) == draft:
                return _Carried(
                    carried,
                    f"tenant {tenant_id}'s saved block, unchanged: change it under Proposed to "
                    "simulate a change",
                    back,
                    saved_blocks,
                )
            origin = f"the unsaved editor of tenant {tenant_id}"
            return _Carried(carried, origin, back, saved_blocks)
    return _nothing()


def _back_to_tenant(
    request: HttpRequest, tenant_id: str, posted: Draft, saved: bool
) -> dict[str, Any] | None:
    """The way back to the editor a tenant's draft came from.

    An editor's is a post of that draft, in the view it was in (its YAML
    text as typed, so a block that did not parse is there to fix), at the
    version the editor was loaded with: a save from there is still refused
    if someone saved since. A viewer's editor shows the saved block, so a
    link to it does; a tenant not saved yet (`saved` false) has none.
    """
    routable = not tenant_id_errors(tenant_id)
    if request.role != EDITOR:  # type: ignore[attr-defined]
        if not (saved and routable):
            return None
        url = reverse("dashboard:tenant", args=[tenant_id])
        return {"method": "get", "url": url, "label": f"‹ Tenant {tenant_id}'s editor"}
    typed = posted.view == YAML and posted.text is not None
    fields = {
        "version": request.POST.get("version", ""),
        # The change note typed beside the draft is part of it: lost, it had
        # to be typed again before the save it was written for.
        "message": request.POST.get("message", ""),
        "view": YAML,
        "yaml": posted.text if typed else yaml_for(tenant_id, posted.config or {}),
        "action": "view-yaml" if typed else "view-form",
    }
    if saved and routable:
        url = reverse("dashboard:tenant", args=[tenant_id])
    else:
        # A tenant not saved yet: the new-tenant editor, which takes the ID posted.
        url = reverse("dashboard:tenant-new")
        fields["tenant_id"] = tenant_id
    return {
        "method": "post",
        "url": url,
        "tenant": tenant_id,
        "fields": fields,
        "label": f"‹ Back to tenant {tenant_id}'s editor, with this draft",
        "help": "Opens the editor unsaved, as the proposal stands under Proposed; "
        "nothing is saved.",
    }


def _back_to_settings(request: HttpRequest) -> dict[str, Any]:
    """The way back to the settings page the proposal came from.

    An editor's is a post of the form as it was sent here, every box as
    typed (a value the settings page will refuse included, to fix there),
    at the version the page was loaded with and with the change note: the
    page shows it as its unsaved draft (`DRAFT`). A viewer's form could not
    be changed, so a link to the page is all there is to go back to.
    """
    url = reverse("dashboard:settings")
    if request.role != EDITOR:  # type: ignore[attr-defined]
        return {"method": "get", "url": url, "label": "‹ Settings"}
    fields = {name: request.POST[name] for name in SETTINGS_FIELDS if name in request.POST}
    fields.update(
        version=request.POST.get("version", ""),
        message=request.POST.get("message", ""),
        action=DRAFT,
    )
    return {
        "method": "post",
        "url": url,
        "settings": True,
        "fields": fields,
        "label": "‹ Back to Settings, with this draft",
        "help": "Opens Settings unsaved, as the proposal stands under Proposed; nothing is saved.",
    }


def _windows() -> list[dict[str, Any]]:
    """The recent windows offered, each with `warmup_in` (see the module; None: unknown).

    Only a process whose scheduler runs has recorded traffic (elsewhere a
    recent run is refused, 409 `no_traffic`), so only there is it said.
    """
    recorder = traffic_recording.recorder() if runtime_host.started() else None
    return [
        {
            "seconds": seconds,
            "label": label,
            "warmup_in": None if recorder is None else recorder.extent(seconds).warmup_in_seconds,
        }
        for seconds, label in WINDOWS
    ]


def _scenarios() -> list[dict[str, Any]]:
    """Each scenario with what a blank Duration and Queriers box mean in it.

    `duration` is its own duration in seconds as text, None when it has none
    (mimir-slow-consumer: everything arrives at once, so the page hides the
    box, and the API refuses one); `queriers` how many it runs with.
    """
    scenarios = []
    for name in SCENARIO_NAMES:
        duration, queriers = SCENARIO_KNOBS[name]
        shown = None if duration is None else f"{duration:g}"
        scenarios.append({"name": name, "duration": shown, "queriers": queriers})
    return scenarios


@role_required
def simulate(request: HttpRequest) -> HttpResponse:
    """The page; a POST only pre-fills the proposal (nothing is saved)."""
    live = queue_config_to_dict(selectors.queue_config_get())
    carried = _carried(request, live) if request.method == "POST" else _nothing()
    context = {
        # The live side of what the proposal changes: beside a tenant's draft,
        # the block it would replace (none for a tenant not saved yet).
        "live_view": {"settings": live, "tenants": carried.stored},
        "proposal": carried.proposal,
        "origin": carried.origin,
        "back": carried.back,
        "windows": _windows(),
        "start_from_choices": START_FROM_CHOICES,
        "scenarios": _scenarios(),
        "components": COMPONENTS,
        "layouts": LAYOUTS,
        "selections": COMPONENT_SELECTIONS,
    }
    return page(request, "dashboard/simulate.html", context)
