"""The background worker on its own: a bounded queue drained in batches by one thread."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from refcheck_callbacks.engine.worker import BackgroundWorker


@dataclass
class Batches:
    """The worker's `Batches` from three functions: what a batch makes, where it goes, what is
    counted lost."""

    process: Callable[[list[int]], Awaitable[Any]]
    deliver: Callable[[Any], object]
    count_lost: Callable[[int, str], object]

    async def check(self, items: list[int]) -> Any:
        return await self.process(items)

    def lost(self, count: int, reason: str) -> None:
        self.count_lost(count, reason)


def _worker(handler: Recorder, **options: float) -> BackgroundWorker[int, None]:
    """A worker whose batches go to `handler`; nothing to deliver, and no item may be lost."""

    def lost(count: int, reason: str) -> None:
        raise AssertionError(f"{count} items lost: {reason}")

    return BackgroundWorker(Batches(handler, lambda _: None, lost), **options)  # type: ignore[arg-type]


class Recorder:
    """A batch handler that records what it got, how many batches ran at once, and can be held."""

    def __init__(self) -> None:
        self.items: Counter[int] = Counter()
        self.sizes: list[int] = []
        self.running = 0
        self.most_running = 0
        self.gate = threading.Event()
        self.gate.set()
        self._lock = threading.Lock()

    async def __call__(self, batch: list[int]) -> None:
        with self._lock:
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        try:
            await asyncio.to_thread(self.gate.wait, 30)
            with self._lock:
                self.items.update(batch)
                self.sizes.append(len(batch))
        finally:
            with self._lock:
                self.running -= 1


def test_concurrent_puts_are_each_handled_once_or_refused() -> None:
    handler = Recorder()
    worker = _worker(handler, max_queue=500, batch_size=16)

    def producer(thread: int) -> list[int]:
        return [i for i in range(thread * 1000, thread * 1000 + 400) if worker.put(i)]

    with ThreadPoolExecutor(6) as pool:
        accepted = [i for batch in pool.map(producer, range(6)) for i in batch]
    assert worker.flush(30)
    assert sorted(handler.items) == sorted(accepted)
    assert set(handler.items.values()) == {1}
    assert max(handler.sizes) <= 16
    assert worker.shutdown(5)


def test_batches_in_flight_never_exceed_the_concurrency() -> None:
    handler = Recorder()
    worker = _worker(handler, max_queue=1000, batch_size=4, max_wait=0.0, concurrency=3)
    for i in range(200):
        assert worker.put(i)
    assert worker.flush(30)
    assert handler.most_running <= 3
    assert sum(handler.items.values()) == 200
    worker.shutdown(5)


def test_a_held_batch_makes_flush_time_out_then_a_full_queue_refuses() -> None:
    handler = Recorder()
    handler.gate.clear()
    worker = _worker(handler, max_queue=4, batch_size=1)
    assert worker.put(0)
    deadline = time.monotonic() + 5
    while handler.running == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert all(worker.put(i) for i in range(1, 5))
    assert not worker.put(5)  # four wait in the queue: it is full
    started = time.monotonic()
    assert not worker.flush(0.2)
    assert time.monotonic() - started < 2
    handler.gate.set()
    assert worker.flush(30)
    assert sorted(handler.items) == [0, 1, 2, 3, 4]
    worker.shutdown(5)
    assert not worker.put(6)  # closed


def test_a_handler_raising_a_base_exception_loses_only_its_batch_which_is_counted() -> None:
    lost: list[tuple[int, str]] = []
    delivered: list[list[int]] = []

    async def process(batch: list[int]) -> list[int]:
        if 0 in batch:
            raise SystemExit(1)
        return batch

    worker: BackgroundWorker[int, list[int]] = BackgroundWorker(
        Batches(process, delivered.append, lambda count, reason: lost.append((count, reason))),
        batch_size=1,
    )
    assert all(worker.put(i) for i in range(3))
    assert worker.flush(10)
    assert lost == [(1, "worker_crash")]
    assert sorted(delivered) == [[1], [2]]
    assert worker.put(3) and worker.flush(10)  # the loop lives on
    worker.shutdown(5)


def test_a_shutdown_deadline_settles_every_item_once_delivered_or_lost() -> None:
    handler = Recorder()
    handler.gate.clear()
    lost: list[tuple[int, str]] = []
    delivered: list[None] = []
    worker: BackgroundWorker[int, None] = BackgroundWorker(
        Batches(handler, delivered.append, lambda count, reason: lost.append((count, reason))),
        batch_size=2,
    )
    assert all(worker.put(i) for i in range(10))
    started = time.monotonic()
    assert not worker.shutdown(0.3, "exit")
    assert time.monotonic() - started < 2
    handler.gate.set()  # the held batch finishes after the deadline: it must not be delivered
    time.sleep(0.3)
    assert delivered == []
    assert lost == [(10, "exit")]
