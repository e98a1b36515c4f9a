"""The what-if engine's line of waiting workers, and the queriers seen to refuse.

`WaitingLine` keeps the workers that asked for work and got none, in the
order they started waiting (the runtime's dispatch pass offers the queue
to them in that order), and each querier's part of the line in the same
order. `Refusals` remembers which queriers refused a (tenant, priority),
so the pass after an arrival (`whatif_engine.run_engine`) asks only the
workers that may take the new request.

Invariants: `order` holds each waiting worker once, by when it joined;
`_of[q]` holds exactly the workers of `order` whose querier is `q`, in the
same order; `looked` counts the workers looked over, the engine's measure
of this work for its deadline and cancel checks.

Imports nothing of the project.
"""

from __future__ import annotations

from collections import deque

__all__ = ["Refusals", "WaitingLine"]


class Refusals:
    """The queriers seen to refuse requests of one (tenant, priority).

    Whether a querier may take a queued request depends only on the
    request's tenant (its shard) and priority (the querier's reservation
    floor there), never on its component, actor or when it asked: every
    walk of the tree tries each tenant the querier may serve and each of
    its components before it answers nothing, and a refused dequeue
    changes nothing. So a querier that refused one request of a (tenant,
    priority) refuses them all, until the limits change. `refused` holds
    them while they are few; past half the queriers, `open` holds the
    others instead, so the ones left to ask are found without a scan.
    """

    __slots__ = ("open", "refused")

    def __init__(self) -> None:
        self.refused: set[int] = set()
        self.open: set[int] | None = None

    def exclude(self, querier: int, queriers: int) -> None:
        if self.open is not None:
            self.open.discard(querier)
            return
        self.refused.add(querier)
        if 2 * len(self.refused) > queriers:
            self.open = set(range(queriers)).difference(self.refused)
            self.refused = set()


class WaitingLine:
    """Workers (by index) waiting for work; `querier_of[w]` is worker w's querier."""

    __slots__ = ("_joined", "_joined_at", "_of", "_querier_of", "looked", "order")

    def __init__(self, querier_of: list[int], queriers: int) -> None:
        self._querier_of = querier_of
        self.order: list[int] = []
        self._of: list[deque[int]] = [deque() for _ in range(queriers)]
        self._joined_at = [0] * len(querier_of)
        self._joined = 0
        self.looked = 0

    def __len__(self) -> int:
        return len(self.order)

    def join(self, w: int) -> None:
        """Worker `w` asked and got nothing: to the back of the line."""
        self.order.append(w)
        self._of[self._querier_of[w]].append(w)
        self._joined_at[w] = self._joined
        self._joined += 1

    def leave_at(self, i: int) -> None:
        """The worker `order[i]` got work."""
        w = self.order.pop(i)
        self._of[self._querier_of[w]].remove(w)

    def leave(self, w: int) -> None:
        """Worker `w` got work."""
        self.order.remove(w)
        self._of[self._querier_of[w]].remove(w)

    def first_not_refused(self, refusals: Refusals) -> int:
        """The first waiting worker whose querier was not seen to refuse; -1: none."""
        open_ = refusals.open
        if open_ is not None and len(open_) < len(self.order):
            # Few queriers left to ask: the earliest of their first waiters.
            self.looked += len(open_)
            best, best_at = -1, self._joined
            for q in open_:
                line = self._of[q]
                if line and self._joined_at[line[0]] < best_at:
                    best = line[0]
                    best_at = self._joined_at[best]
            return best
        querier_of = self._querier_of
        n = 0
        if open_ is None:
            refused = refusals.refused
            for w in self.order:
                n += 1
                if querier_of[w] not in refused:
                    self.looked += n
                    return w
        else:
            for w in self.order:
                n += 1
                if querier_of[w] in open_:
                    self.looked += n
                    return w
        self.looked += n
        return -1
