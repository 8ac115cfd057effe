"""Running blocking stage code off the worker's event loop, on a bounded pool of our threads.

CPU-bound checkers and extractors run here so that a stage deadline can fire while they work.
A thread cannot be cancelled: when a deadline passes, the call is *abandoned*. Its caller gets
its timeout at once while the thread runs on until the function returns, keeping its place in
the pool. The pool is bounded, so abandoned calls cannot pile up: when every thread is held,
a new call waits for one inside its own deadline and is cancelled unstarted if that passes
first. `abandoned` says how many abandoned calls are still running, `abandoned_total` how many
there have been in this process.

Why not asyncio's default executor: the event loop resolves host names on it, so stuck
checker threads would stall LLM calls; and concurrent.futures joins its threads at interpreter
exit before atexit hooks run, so one stuck call would hang the app's exit and our exit flush
could not use a thread at all. These threads are daemons: at exit, after the monitors' own
exit flush, the idle ones are retired (briefly joined), because native libraries (torch) abort
the process when a thread that ran their code is still alive as they tear down; a thread stuck
in an abandoned call is left behind.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_Work = tuple["concurrent.futures.Future[Any]", Callable[[], Any]] | None
"""A call to run, or None: the thread that takes it ends."""


class BlockingPool:
    """At most `max_threads` daemon threads running blocking calls for coroutines."""

    def __init__(self, max_threads: int, name: str = "refcheck-stage") -> None:
        if max_threads < 1:
            raise ValueError("max_threads must be at least 1")
        self.max_threads = max_threads
        self.name = name
        self._reset()

    def _reset(self) -> None:
        """Empty state: at start, and in a forked child (whose copy has no threads)."""
        self._lock = threading.Lock()
        self._work: queue.SimpleQueue[_Work] = queue.SimpleQueue()
        self._threads = 0
        self._running: set[threading.Thread] = set()
        self._waiting = 0
        """Calls submitted and not yet taken by a thread."""
        self._idle = 0
        self._abandoned = 0
        self.abandoned_total = 0

    @property
    def abandoned(self) -> int:
        """Calls whose caller gave up that are still running."""
        with self._lock:
            return self._abandoned

    @property
    def threads(self) -> int:
        with self._lock:
            return self._threads

    async def run(self, function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """`function(*args, **kwargs)` on a pool thread. Cancelling the caller cancels a call
        that has not started and abandons one that has."""
        future: concurrent.futures.Future[R] = concurrent.futures.Future()
        try:
            self._submit(future, lambda: function(*args, **kwargs))
        except RuntimeError:
            # No new thread can start (the interpreter is finalizing): run it here, so the
            # answers of an exit flush are still checked.
            return function(*args, **kwargs)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            if not future.cancel() and not future.done():
                self._abandon(future)
            raise

    def _submit(self, future: concurrent.futures.Future[Any], call: Callable[[], Any]) -> None:
        with self._lock:
            self._waiting += 1
            start = self._waiting > self._idle and self._threads < self.max_threads
            if start:
                self._threads += 1
        self._work.put((future, call))
        if start:
            thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
            try:
                thread.start()
            except RuntimeError:
                with self._lock:
                    self._threads -= 1
                    alone = self._threads == 0
                if alone:
                    future.cancel()
                    raise

    def _abandon(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._abandoned += 1
            self.abandoned_total += 1
        future.add_done_callback(self._released)

    def _released(self, _: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._abandoned -= 1

    def _serve(self) -> None:
        with self._lock:
            self._running.add(threading.current_thread())
        try:
            while (work := self._next()) is not None:
                future, call = work
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    result = call()
                except BaseException as exc:
                    # Even SystemExit: it belongs to the caller's stage, not to this thread.
                    future.set_exception(exc)
                else:
                    future.set_result(result)
                del future, call, work
        finally:
            with self._lock:
                self._threads -= 1
                self._running.discard(threading.current_thread())

    def _next(self) -> _Work:
        with self._lock:
            self._idle += 1
        work = self._work.get()
        with self._lock:
            self._idle -= 1
            self._waiting -= 1
        return work

    def retire(self, timeout: float) -> None:
        """End the threads, waiting at most `timeout` seconds in total; a thread busy past it
        (an abandoned call) ends when its call returns. For interpreter exit."""
        with self._lock:
            threads = list(self._running)
            self._waiting += len(threads)
        for _ in threads:
            self._work.put(None)
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


STAGE_THREADS = BlockingPool(min(32, (os.cpu_count() or 1) + 4))
"""The process's pool for blocking stage work (sized like asyncio's default executor)."""
os.register_at_fork(after_in_child=STAGE_THREADS._reset)
# Registered at import, so it runs after every monitor's exit flush (atexit runs last-in first).
atexit.register(STAGE_THREADS.retire, 0.5)


async def run_blocking(function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run blocking stage code on `STAGE_THREADS`, so stage deadlines stay enforceable."""
    return await STAGE_THREADS.run(function, *args, **kwargs)
