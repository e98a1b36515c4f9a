"""Config examples shared by tests in several directories (read them, never mutate).

The seed's tenant block is the `cortex-seed` scenario's own config, so the
tests and the what-if scenario can never drift apart.
"""

from __future__ import annotations

from scheduler_core.whatif_scenarios import SEED_TENANT_CONFIG

__all__ = ["SEED_TENANT_CONFIG"]
