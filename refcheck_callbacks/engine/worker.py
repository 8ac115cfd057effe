"""The background worker: a bounded queue drained in batches by one daemon thread.

Modelled on OpenTelemetry's BatchProcessor. `put` is O(1) and never blocks: a full queue
refuses at once. The thread runs its own asyncio loop (never the host's), takes up to
`batch_size` items, waiting at most `max_wait` seconds for a batch to fill, and hands each
batch to its `Batches` (the monitor's `engine.checking.Checking`): `check` makes the batch's
output, `deliver` hands it on; up to `concurrency` batches run at a time. `put` wakes it only
for the first item of a batch and for a full batch. After `os.fork` the child starts empty with
a fresh thread on its first `put`.

Every item `put` accepts is *settled* exactly once: delivered, or counted through
`Batches.lost` with a reason. A batch is claimed by whoever settles it first, the worker (to
deliver) or a `shutdown` whose deadline passed (to count it), under one lock, so an item is
never both.
Nothing a batch raises, BaseException included, ends the loop; should the loop die all the
same, its items are counted (`worker_crash`) and the next `put` starts a fresh thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from refcheck_callbacks.contract.reasons import DropReason
from refcheck_callbacks.support.deadline import Deadline, wait_limit
from refcheck_callbacks.support.logs import logger

Item = TypeVar("Item")
Out = TypeVar("Out")
R = TypeVar("R")


class Batches(Protocol[Item, Out]):
    """What the worker does with its batches: the monitor's `Checking`."""

    async def check(self, items: list[Item]) -> Out:
        """The batch's work, on the worker's loop."""
        ...

    def deliver(self, output: Out) -> None:
        """Hand a batch's output on (exporters, hooks); called only for unsettled batches."""
        ...

    def lost(self, count: int, reason: DropReason) -> None:
        """Count accepted items given up, and why."""
        ...


def _reset_in_child(ref: weakref.ReferenceType[BackgroundWorker[Any, Any]]) -> None:
    worker = ref()
    if worker is not None:
        worker._reset_state()


@dataclass(eq=False)
class _Batch(Generic[Item]):
    items: list[Item]
    settled: bool = False
    task: asyncio.Task[None] | None = field(default=None, repr=False)


class BackgroundWorker(Generic[Item, Out]):
    """A bounded queue of items, checked and delivered in batches by `batches` (see the module)."""

    def __init__(
        self,
        batches: Batches[Item, Out],
        max_queue: int = 2048,
        batch_size: int = 32,
        max_wait: float = 0.05,
        concurrency: int = 1,
        name: str = "refcheck-worker",
    ) -> None:
        if max_queue < 1 or batch_size < 1 or concurrency < 1:
            raise ValueError("max_queue, batch_size and concurrency must be at least 1")
        self.batches = batches
        self.max_queue = max_queue
        self.batch_size = batch_size
        self.max_wait = max_wait
        self.concurrency = concurrency
        self.name = name
        self.closed = False
        self._reset_state()
        ref = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: _reset_in_child(ref))

    def _reset_state(self) -> None:
        """Fresh locks, queue and no thread: used at start and in a forked child."""
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queue: deque[Item] = deque()
        self._in_flight: set[_Batch[Item]] = set()
        self._pending = 0
        """Items accepted and not yet settled (or settled by the worker and still delivering)."""
        self._wake_pending = False
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._stopping = False

    @property
    def queue_size(self) -> int:
        return len(self._queue)

    @property
    def in_worker_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def put(self, item: Item) -> bool:
        """Enqueue without blocking; False when the queue is full or the worker is closed."""
        if self.closed:
            return False
        with self._lock:
            if len(self._queue) >= self.max_queue or self.closed:
                return False
            if self._loop is None:
                self._start_locked()
            loop, event = self._loop, self._wake
            self._queue.append(item)
            self._pending += 1
            # A wake costs the caller a self-pipe write and a GIL hand-off to the worker (~100 us
            # in benchmarks/langchain_overhead.py): only the first item of a batch (to start
            # its `max_wait` clock) and a full batch need one.
            size = len(self._queue)
            wake = (size == 1 or size >= self.batch_size) and not self._wake_pending
            self._wake_pending = self._wake_pending or wake
        if wake:
            assert loop is not None and event is not None
            self._call_soon(loop, event.set)
        return True

    def run(self, coro: Coroutine[Any, Any, R]) -> concurrent.futures.Future[R]:
        """Schedule a coroutine on the worker's loop (for direct, unqueued checks). Raises
        RuntimeError when the loop is closing."""
        loop, _ = self._ensure_started()
        return asyncio.run_coroutine_threadsafe(coro, loop)

    def _ensure_started(self) -> tuple[asyncio.AbstractEventLoop, asyncio.Event]:
        with self._lock:
            if self._loop is None:
                self._start_locked()
            assert self._loop is not None and self._wake is not None
            return self._loop, self._wake

    @staticmethod
    def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[[], object]) -> None:
        # A loop that closed under us settled its items when it ended.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(callback)

    def _start_locked(self) -> None:
        ready = threading.Event()
        loop = asyncio.new_event_loop()
        wake = asyncio.Event()
        wake.set()  # a restarted loop may find items already queued
        self._wake_pending = False

        def main() -> None:
            asyncio.set_event_loop(loop)
            ready.set()
            try:
                loop.run_until_complete(self._consume(wake))
            except BaseException:
                logger.critical(
                    "refcheck worker: the loop died; its items are counted lost", exc_info=True
                )
            finally:
                self._ended(loop)

        thread = threading.Thread(target=main, name=self.name, daemon=True)
        self._thread, self._loop, self._wake = thread, loop, wake
        thread.start()
        ready.wait()

    def _ended(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop stopped: settle whatever it still held, and let a later `put` start anew."""
        try:
            # Libraries leave tasks on our loop (litellm's logging worker does): cancel
            # them, as asyncio.run would, so closing it prints no "Task was destroyed".
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()
        except BaseException:
            logger.exception("refcheck worker: closing the loop failed")
        with self._lock:
            if self._loop is loop:
                self._thread = self._loop = self._wake = None
            crashed = not self._stopping
        if crashed:
            self._give_up(DropReason.WORKER_CRASH)

    async def _consume(self, wake: asyncio.Event) -> None:
        slots = asyncio.Semaphore(self.concurrency)
        while not (self._stopping and not self._queue):
            await wake.wait()
            self._clear_wake(wake)
            # A slot first, then the batch: items wait in the queue, where `max_queue` bounds
            # them, not in batches that cannot run yet.
            while self._queue and not self._stopping:
                await slots.acquire()
                batch = await self._take_batch(wake)
                if batch is None:
                    slots.release()
                    break
                batch.task = asyncio.get_running_loop().create_task(self._run(batch, slots))
        running = [b.task for b in list(self._in_flight) if b.task is not None]
        await asyncio.gather(*running, return_exceptions=True)

    def _clear_wake(self, wake: asyncio.Event) -> None:
        wake.clear()
        with self._lock:
            self._wake_pending = False

    async def _take_batch(self, wake: asyncio.Event) -> _Batch[Item] | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_wait
        while 0 < len(self._queue) < self.batch_size and not self._stopping:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:
                await asyncio.wait_for(wake.wait(), remaining)
            except asyncio.TimeoutError:
                break
            self._clear_wake(wake)
        with self._lock:
            size = min(self.batch_size, len(self._queue))
            if not size:
                return None
            batch = _Batch([self._queue.popleft() for _ in range(size)])
            self._in_flight.add(batch)
            return batch

    async def _run(self, batch: _Batch[Item], slots: asyncio.Semaphore) -> None:
        try:
            output = await self.batches.check(batch.items)
            if self._claim(batch):
                self.batches.deliver(output)
        except BaseException:
            # `check` and `deliver` keep failures per request: this is a bug of ours, or a
            # shutdown cancelling a batch it has already counted.
            if self._claim(batch):
                logger.exception("refcheck worker: a batch failed; its items are counted lost")
                self.batches.lost(len(batch.items), DropReason.WORKER_CRASH)
        finally:
            slots.release()
            with self._idle:
                self._in_flight.discard(batch)
                self._pending -= len(batch.items)
                self._idle.notify_all()

    def _claim(self, batch: _Batch[Item]) -> bool:
        """True for the first to settle `batch` (the worker or a `shutdown`), False after."""
        with self._lock:
            first = not batch.settled
            batch.settled = True
            return first

    def _give_up(self, reason: DropReason) -> int:
        """Settle every queued and unsettled in-flight item as lost; how many there were."""
        with self._idle:
            count = len(self._queue)
            self._queue.clear()
            for batch in self._in_flight:
                if not batch.settled:
                    batch.settled = True
                    count += len(batch.items)
                    batch.items = []  # so `_run` takes nothing more off `_pending`
            self._pending -= count
            self._idle.notify_all()
        if count:
            self.batches.lost(count, reason)
        return count

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every accepted item is settled and delivered; False on timeout."""
        if self.in_worker_thread:
            return False
        with self._idle:
            return self._idle.wait_for(lambda: self._pending <= 0, wait_limit(timeout))

    def shutdown(
        self, timeout: float | None, reason: DropReason = DropReason.SHUTDOWN_TIMEOUT
    ) -> bool:
        """Stop taking items, finish the queue within `timeout` (one deadline for everything),
        count what is left as lost for `reason`, stop the thread. A second call (a signal
        during a shutdown) waits within its own deadline and counts what is still left.

        A KeyboardInterrupt raised while it waits (Ctrl-C in the main thread) is re-raised
        after the leftovers are counted, as lost to a `signal`.
        """
        deadline = Deadline(timeout)
        with self._lock:
            self.closed = True
        try:
            flushed = self.flush(deadline.remaining())
        except BaseException:
            self._stop(Deadline(0), DropReason.SIGNAL)
            raise
        self._stop(deadline, reason)
        return flushed

    def _stop(self, deadline: Deadline, reason: DropReason) -> None:
        with self._lock:
            self._stopping = True
            thread, loop, wake = self._thread, self._loop, self._wake
            tasks = [b.task for b in self._in_flight if b.task is not None]
        self._give_up(reason)
        if thread is None or loop is None or wake is None:
            return
        for task in tasks:
            self._call_soon(loop, task.cancel)
        self._call_soon(loop, wake.set)
        if not self.in_worker_thread:
            thread.join(deadline.remaining())
