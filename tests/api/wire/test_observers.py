"""The fan-out on the runtime's one observer slot."""

from __future__ import annotations

from typing import Any

from api.wire.observers import FanOutObserver, install_observer
from scheduler_core.model import Request
from scheduler_core.runtime import SchedulerRuntime


class Seen:
    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def on_enqueued(self, request: Request) -> None:
        self.log.append(f"{self.name}:{request.id}")


def test_one_failing_observer_does_not_starve_the_next() -> None:
    seen: list[str] = []

    class Broken:
        def on_enqueued(self, request: Request) -> None:
            raise RuntimeError("boom")

    class Recorder:
        def on_enqueued(self, request: Request) -> None:
            seen.append(request.id)

    fan = FanOutObserver()
    fan.add(Broken())
    fan.add(Recorder())
    fan.on_enqueued(Request(id="r", tenant_id="t"))
    assert seen == ["r"]


def test_installing_on_a_runtime_with_an_observer_of_its_own_keeps_it_first() -> None:
    seen: list[str] = []
    runtime = SchedulerRuntime(observer=Seen(seen, "own"))
    install_observer(runtime, Seen(seen, "added"))
    install_observer(runtime, Seen(seen, "later"))
    runtime.enqueue(Request(id="r", tenant_id="t"))
    assert seen == ["own:r", "added:r", "later:r"]


def test_an_observer_added_twice_hears_each_hook_once() -> None:
    seen: list[str] = []
    fan: Any = FanOutObserver()
    observer = Seen(seen, "x")
    fan.add(observer)
    fan.add(observer)
    fan.on_enqueued(Request(id="r", tenant_id="t"))
    assert seen == ["x:r"] and fan.observers == (observer,)
