"""A SIGTERM drains first, gives the signal back, then raises it again for the server."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Iterator

import pytest

from api.wire.drain_signals import SignalDrain
from tests.polling import until


@pytest.fixture
def server_handler() -> Iterator[list[str]]:
    """Stands for Daphne's own SIGTERM handler; records what it saw."""
    seen: list[str] = []
    previous = signal.signal(signal.SIGTERM, lambda *_: seen.append("server"))
    yield seen
    signal.signal(signal.SIGTERM, previous)


async def test_the_drain_runs_before_the_servers_own_handler_sees_the_signal(
    server_handler: list[str],
) -> None:
    events = server_handler
    release = asyncio.Event()

    async def drain(sig: signal.Signals) -> None:
        events.append(f"drain {sig.name}")
        await release.wait()  # the drain takes its time; the server must wait for it
        events.append("drained")

    signals = SignalDrain(asyncio.get_running_loop(), drain)
    signals.install()
    os.kill(os.getpid(), signal.SIGTERM)
    await until(lambda: events == ["drain SIGTERM"])
    await asyncio.sleep(0.05)
    assert events == ["drain SIGTERM"]
    release.set()
    await until(lambda: events == ["drain SIGTERM", "drained", "server"])


async def test_restore_gives_the_signal_back_without_draining(server_handler: list[str]) -> None:
    drains: list[signal.Signals] = []

    async def drain(sig: signal.Signals) -> None:
        drains.append(sig)

    signals = SignalDrain(asyncio.get_running_loop(), drain)
    signals.install()
    signals.restore()
    os.kill(os.getpid(), signal.SIGTERM)
    await until(lambda: server_handler == ["server"])
    assert drains == []


async def test_off_the_main_thread_nothing_is_taken(server_handler: list[str]) -> None:
    loop = asyncio.get_running_loop()

    async def drain(sig: signal.Signals) -> None:
        raise AssertionError("no drain off the main thread")

    worker = threading.Thread(target=SignalDrain(loop, drain).install)
    worker.start()
    worker.join()
    os.kill(os.getpid(), signal.SIGTERM)
    await until(lambda: server_handler == ["server"])


async def test_a_signal_repeated_during_the_drain_waits_for_it(
    server_handler: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Handed to the server, a second SIGTERM ended the process mid-drain, its queue lost."""
    events = server_handler
    release = asyncio.Event()

    async def drain(sig: signal.Signals) -> None:
        events.append("drain")
        signals.restore()  # the host's stop asks for this at its start
        await release.wait()
        events.append("drained")

    signals = SignalDrain(asyncio.get_running_loop(), drain)
    signals.install()
    os.kill(os.getpid(), signal.SIGTERM)
    await until(lambda: events == ["drain"])
    os.kill(os.getpid(), signal.SIGTERM)
    await until(lambda: "SIGTERM again: already draining" in caplog.text)
    assert events == ["drain"]
    release.set()
    await until(lambda: events == ["drain", "drained", "server"])


async def test_a_sigint_ignored_before_the_drain_ends_the_server_by_sigterm_after_it(
    server_handler: list[str],
) -> None:
    """A background job inherits SIGINT ignored: raised again, it did nothing,
    and the drained server hung for ever."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        drains: list[str] = []

        async def drain(sig: signal.Signals) -> None:
            drains.append(sig.name)

        signals = SignalDrain(asyncio.get_running_loop(), drain)
        signals.install()
        os.kill(os.getpid(), signal.SIGINT)
        await until(lambda: server_handler == ["server"])
        assert drains == ["SIGINT"]
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # given back as it was
    finally:
        signal.signal(signal.SIGINT, previous)
