"""The replica board read from views' worker threads while the loop's thread updates it.

Views read it in DRF's threads (`peers_unheard`, `take_view`, `known_peers`)
while the summaries pass, on the loop's thread, adds and drops peers
(`note_registry`). Real threads; the switch interval is cut so the two
interleave thousands of times in a moment, as they do over days in service.
"""

from __future__ import annotations

import sys
import threading
import time

from api.cluster.replica_board import ReplicaBoard
from tests.api.cluster.replica_summaries import snapshot

READS = 2_000


def test_reads_in_another_thread_survive_peers_coming_and_going() -> None:
    board = ReplicaBoard("a")
    now = time.time()
    # Crashed peers a restart-heavy service leaves known (not withdrawn).
    crashed = {f"old-{i}": now - 100 for i in range(200)}
    board.note_registry(crashed, now)
    done = threading.Event()
    errors: list[BaseException] = []

    def registry_reads() -> None:
        n = 0
        while not done.is_set():
            n += 1
            # A peer restarted under a new ID each time (host and PID).
            board.note_registry({**crashed, f"new-{n}": time.time()}, time.time())

    def view_reads() -> None:
        local = snapshot(1.0, [])
        try:
            for _ in range(READS):
                board.known_peers()
                board.view(local)
                board.replica_states()
        except RuntimeError as exc:  # "dictionary changed size during iteration"
            errors.append(exc)
        finally:
            done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=registry_reads), threading.Thread(target=view_reads)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []
