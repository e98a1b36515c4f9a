"""A replica's first queue answers after it starts, with a real peer (Redis and PostgreSQL).

The first request to a process starts its runtime, and the runtime's first
registry read comes a moment later: answers before it had no `replicas`
block and passed for a lone replica's. They now say the peers are not heard
from yet, and the answers after the read name the peer.
"""

from __future__ import annotations

import json
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from api.wire.queue_peers import UNHEARD_NOTE
from loadgen.daphne_process import DaphneProcess
from tests.service.replica_pair import replica, require_servers, scale_out_env

BOTH = ["replica-a", "replica-b"]


def get(server: DaphneProcess, token: str, path: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/{path}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=15) as response:
        return json.loads(response.read())


def replicas_said(body: dict[str, Any]) -> tuple[list[str], str]:
    """(replica ids, note) of a `replicas` block, or of a listing's replica fields."""
    block = body["replicas"]
    if isinstance(block, dict):
        return block["ids"], block["note"]
    return block, body.get("replicas_note", "")


def test_a_replica_s_first_answers_say_its_peers_are_not_heard_yet_then_name_them() -> None:
    redis_url = require_servers()[1]
    with scale_out_env() as env:
        a = replica(env, "replica-a", REDIS_URL=redis_url)
        b = DaphneProcess(
            extra_env={
                **env,
                "REPLICA_ID": "replica-b",
                "REDIS_URL": redis_url,
                "CONFIG_RECONCILE_SECONDS": "300",
            }
        )
        try:
            a.start()
            token = a.issue_token("viewer", name="first-answers")
            # Its port, not /healthz: no request reaches it before the test's own.
            b.start(healthz=False)
            paths = ["queue/", "queue/requests/", "queue/usage/"]
            with ThreadPoolExecutor(len(paths)) as pool:
                firsts = list(pool.map(lambda path: get(b, token, path), paths))
            for body in firsts:
                ids, note = replicas_said(body)
                # Before b's first registry read it knows only itself and says
                # so; a request that came after it names both.
                assert (ids, note) == (["replica-b"], UNHEARD_NOTE) or ids == BOTH, body
            deadline = time.monotonic() + 10
            while replicas_said(get(b, token, "queue/"))[0] != BOTH:
                assert time.monotonic() < deadline, "replica-b never heard of replica-a"
                time.sleep(0.1)
            assert replicas_said(get(b, token, "queue/requests/")) == (BOTH, "")
        finally:
            a.cleanup()
            b.cleanup()
