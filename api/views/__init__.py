"""The REST API's views (`/api/v1/`): HTTP in, service or selector call, HTTP out.

No business rule lives here: validation, versions and revisions are the
config store's (`api.services`, `api.selectors`); these modules translate
headers, bodies and exceptions.
"""

from api import schema as _schema  # noqa: F401  (registers the OpenAPI auth extension)
from api.views.explain import ExplainView
from api.views.revisions import RevisionDetailView, RevisionListView, RevisionRollbackView
from api.views.runtime_config import RuntimeConfigView
from api.views.runtime_state import QueriersView, QueueView
from api.views.scheduler_settings import SettingsView
from api.views.tenants import TenantDetailView, TenantListView

__all__ = [
    "ExplainView",
    "QueriersView",
    "QueueView",
    "RevisionDetailView",
    "RevisionListView",
    "RevisionRollbackView",
    "RuntimeConfigView",
    "SettingsView",
    "TenantDetailView",
    "TenantListView",
]
