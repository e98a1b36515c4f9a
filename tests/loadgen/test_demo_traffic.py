"""The demo mix (loadgen.demo_traffic): what it gives the inspector to show."""

from __future__ import annotations

import random
from collections import defaultdict

from loadgen.demo_traffic import ACTOR_HEADER, make_request
from scheduler_core.actor_path import parse_actor_path
from scheduler_core.model import QueueConfig


def test_the_demo_mix_spreads_tenants_over_several_actors_within_the_default_depth() -> None:
    rng = random.Random(3)
    paths: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for n in range(400):
        msg = make_request(rng, n)
        raw = msg["headers"].get(ACTOR_HEADER)
        paths[msg["tenant"]].add(parse_actor_path(raw) if raw else ())
    depth = QueueConfig().max_queue_hierarchy_levels
    assert len(paths["team-b"]) >= 3  # the tenant the demo queues: its tree has branches
    assert paths["team-c"] == {()}  # and one tenant whose requests name no actor
    assert all(
        0 < len(path) <= depth for tenant in ("team-a", "team-b", "batch") for path in paths[tenant]
    )
