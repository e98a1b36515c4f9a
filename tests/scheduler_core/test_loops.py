"""`running_loop` answers as `asyncio.get_running_loop` does, in every situation."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import warnings

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


def test_a_uvloop_loop_is_found_as_asyncio_finds_it() -> None:
    uvloop = pytest.importorskip("uvloop")
    found, expected = uvloop.run(_found())
    assert found is expected and type(found).__module__.startswith("uvloop")


def test_hooks_someone_else_installed_send_the_question_to_asyncio() -> None:
    async def with_foreign_hooks() -> tuple[asyncio.AbstractEventLoop, asyncio.AbstractEventLoop]:
        before = sys.get_asyncgen_hooks()
        sys.set_asyncgen_hooks(firstiter=lambda agen: None, finalizer=before.finalizer)
        try:
            return await _found()
        finally:
            sys.set_asyncgen_hooks(*before)

    found, expected = asyncio.run(with_foreign_hooks())
    assert found is expected


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_from_a_running_loop_has_no_running_loop() -> None:
    async def fork_and_ask() -> int:
        pid = os.fork()
        if pid == 0:  # the child: the parent's loop is not running here
            try:
                running_loop()
            except RuntimeError:
                os._exit(0)
            os._exit(1)
        return os.waitpid(pid, 0)[1]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
        status = asyncio.run(fork_and_ask())
    assert os.waitstatus_to_exitcode(status) == 0
