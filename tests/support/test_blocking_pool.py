"""The stage thread pool at interpreter exit: idle threads are retired, a stuck one is not
waited for past the timeout (native libraries abort the process when a thread that ran their
code outlives their teardown; see `support.blocking`)."""

from __future__ import annotations

import asyncio
import threading
import time

from refcheck_callbacks.support.blocking import BlockingPool


def test_retire_ends_idle_threads_and_waits_no_longer_than_its_timeout_for_a_stuck_one() -> None:
    pool = BlockingPool(max_threads=3, name="retire-test")
    release = threading.Event()
    stuck = threading.Thread(target=lambda: asyncio.run(pool.run(release.wait, 30)))
    stuck.start()
    try:
        deadline = time.monotonic() + 5
        while pool.threads < 1 and time.monotonic() < deadline:
            time.sleep(0.01)

        async def two_quick_calls() -> list[None]:
            return await asyncio.gather(pool.run(time.sleep, 0.1), pool.run(time.sleep, 0.1))

        asyncio.run(two_quick_calls())
        assert pool.threads == 3  # two idle, one stuck
        started = time.monotonic()
        pool.retire(0.3)
        assert time.monotonic() - started < 1.0
        assert pool.threads == 1  # the stuck one lives on until its call returns
    finally:
        release.set()
        stuck.join(10)
    deadline = time.monotonic() + 5
    while pool.threads and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.threads == 0
