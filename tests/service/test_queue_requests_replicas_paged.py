"""queue/requests/ across two real replicas over real Redis (and PostgreSQL): paging on
while earlier rows leave, an id both replicas hold, a `replica=` naming none.

Beside tests/service/test_queue_requests_replicas.py, whose helpers it uses.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from loadgen.daphne_process import DaphneProcess
from tests.service.replica_pair import replica_pair
from tests.service.test_queue_requests_replicas import acall, frontends_on, until_both_seen


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[DaphneProcess, DaphneProcess]]:
    with replica_pair(QUEUE_PEER_TIMEOUT="1") as pair:
        yield pair


@pytest.fixture(scope="module")
def tokens(pair: tuple[DaphneProcess, DaphneProcess]) -> dict[str, str]:
    a, _ = pair
    return {role: a.issue_token(role, name=f"rp-{role}") for role in ("editor", "frontend")}


async def test_a_listing_paged_while_its_first_rows_leave_goes_on_to_the_last_queued_request(
    pair: tuple[DaphneProcess, DaphneProcess], tokens: dict[str, str]
) -> None:
    """Page 2 said it was the last (`next` null) while b2 and b3 still waited."""
    a, b = pair
    editor = tokens["editor"]
    async with frontends_on((a, b), tokens["frontend"]) as (on_a, on_b):
        for i in range(4):
            await on_a.enqueue(f"a{i}", "paged", f"rate(a_paged_{i}[1m])")
            await on_b.enqueue(f"b{i}", "paged", f"rate(b_paged_{i}[1m])")
        await until_both_seen(a, editor)
        listing = "queue/requests/?tenant=paged&state=queued"
        status, first = await acall(a, editor, f"{listing}&limit=4")
        assert [r["client_id"] for r in first["results"]] == ["a0", "a1", "a2", "a3"], first
        for row in first["results"]:
            status, _ = await acall(
                a, editor, f"queue/requests/{row['id']}/cancel/", {"replica": "replica-a"}
            )
            assert status == 200
        status, second = await acall(a, editor, f"{listing}&limit=2&cursor={first['next']}")
        assert [r["client_id"] for r in second["results"]] == ["b0", "b1"], second
        assert second["total"] == 4 and second["next"] is not None, second
        status, third = await acall(a, editor, f"{listing}&limit=2&cursor={second['next']}")
        assert [r["client_id"] for r in third["results"]] == ["b2", "b3"] and third["next"] is None


async def test_a_lookup_of_an_id_both_replicas_hold_is_a_409_on_either_naming_both(
    pair: tuple[DaphneProcess, DaphneProcess], tokens: dict[str, str]
) -> None:
    """Each replica answered with its own request, another tenant's than the other's."""
    a, b = pair
    editor = tokens["editor"]
    async with frontends_on((a, b), tokens["frontend"]) as (on_a, on_b):
        await on_a.enqueue("mine", "twin-a", "rate(twin_a[1m])")
        await on_b.enqueue("theirs", "twin-b", "rate(twin_b[1m])")
        await until_both_seen(a, editor)
        ids = {}
        for tenant in ("twin-a", "twin-b"):
            status, page = await acall(a, editor, f"queue/requests/?tenant={tenant}")
            (row,) = page["results"]
            ids[row["replica"]] = row["id"]
        # Each process numbers its frontends and their requests alike.
        assert ids["replica-a"] == ids["replica-b"], ids
        rid = ids["replica-a"]
        for server in (a, b):
            status, refused = await acall(server, editor, f"queue/requests/{rid}/")
            assert status == 409 and refused["replicas"] == ["replica-a", "replica-b"], refused
        status, row = await acall(a, editor, f"queue/requests/{rid}/?replica=replica-b")
        assert status == 200 and row["tenant"] == "twin-b"


async def test_a_replica_named_that_no_replica_is_is_a_404_at_once(
    pair: tuple[DaphneProcess, DaphneProcess], tokens: dict[str, str]
) -> None:
    """It waited QUEUE_PEER_TIMEOUT, then a 503 said the replica did not answer."""
    a, _ = pair
    editor = tokens["editor"]
    await until_both_seen(a, editor)
    url = "queue/requests/ws:frontend-1:1/"
    for path, body in (
        (f"{url}?replica=no-such-replica", None),
        (f"{url}cancel/", {"replica": "no-such-replica"}),
    ):
        started = time.monotonic()
        status, answer = await acall(a, editor, path, body)
        assert time.monotonic() - started < 0.9  # the peer timeout here is 1 s
        assert status == 404, answer
        assert answer["detail"] == (
            "no replica named 'no-such-replica'; known: replica-a, replica-b"
        )
