"""The REST API's views (`/api/v1/`): HTTP in, service or selector call, HTTP out.

No business rule lives here: validation, versions and revisions are the
config store's (`api.store.services`, `api.store.selectors`); these modules translate
headers, bodies and exceptions.
"""

from api.rest import schema as _schema  # noqa: F401  (registers the OpenAPI auth extension)
from api.rest.views.config_yaml import RevisionCompareView, TenantYamlView
from api.rest.views.explain import ExplainView
from api.rest.views.revisions import RevisionDetailView, RevisionListView, RevisionRollbackView
from api.rest.views.rules import TenantDryRunView, TenantRuleStatsView
from api.rest.views.runtime_config import RuntimeConfigView
from api.rest.views.runtime_state import QueriersView, QueueView
from api.rest.views.scheduler_settings import SettingsView
from api.rest.views.tenants import TenantDetailView, TenantListView

__all__ = [
    "ExplainView",
    "QueriersView",
    "QueueView",
    "RevisionCompareView",
    "RevisionDetailView",
    "RevisionListView",
    "RevisionRollbackView",
    "RuntimeConfigView",
    "SettingsView",
    "TenantDetailView",
    "TenantDryRunView",
    "TenantListView",
    "TenantRuleStatsView",
    "TenantYamlView",
]
