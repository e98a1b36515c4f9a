"""`running_loop` answers as `asyncio.get_running_loop` does, in every situation."""

from __future__ import annotations

import asyncio
import threading

import pytest

from scheduler_core.loops import running_loop


async def _found() -> tuple[asyncio.AbstractEventLoop, asyncio.AbstractEventLoop]:
    return running_loop(), asyncio.get_running_loop()


def test_outside_any_loop_it_raises_as_asyncio_does() -> None:
    asyncio.run(_found())  # leave a loop behind in the cache
    with pytest.raises(RuntimeError):
        running_loop()


def test_each_new_loop_is_found_not_the_one_before() -> None:
    first, expected_first = asyncio.run(_found())
    second, expected_second = asyncio.run(_found())
    assert first is expected_first and second is expected_second and first is not second


def test_a_loop_running_in_another_thread_is_not_this_thread_s() -> None:
    ready, done = threading.Event(), threading.Event()
    other: dict[str, asyncio.AbstractEventLoop] = {}

    async def hold() -> None:
        other["loop"] = running_loop()
        ready.set()
        await asyncio.get_running_loop().run_in_executor(None, done.wait)

    thread = threading.Thread(target=asyncio.run, args=(hold(),))
    thread.start()
    try:
        ready.wait(10)
        mine, expected = asyncio.run(_found())
        assert mine is expected and mine is not other["loop"]
        with pytest.raises(RuntimeError):
            running_loop()  # the other thread's loop is running, but not here
    finally:
        done.set()
        thread.join(10)
