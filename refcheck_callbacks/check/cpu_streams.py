"""Concurrent single-threaded model batches on a CPU.

A small transformer's operations are too short for torch's intra-op threads to pay: on the NLI
benchmark's model, one batch on two threads ran only 1.8x faster than on one, while two
batches at once, each on one thread, ran 2.2-2.3x faster (1.22-1.26x over the two-thread
batch). Torch releases the GIL inside its operators, so Python threads are enough.

`torch.set_num_threads` is per thread for the calling thread's own operators, but it also sets
the process-wide count that threads started later begin with. The pool pins each of its
threads to one thread and then puts that process-wide count back, so the app's own torch
threads are left as they were.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class SingleThreadStreams:
    """`workers` threads, each running torch on one intra-op thread, mapping batches."""

    def __init__(self, torch: Any, workers: int) -> None:
        if workers < 2:
            raise ValueError("a pool of streams needs at least two workers")
        self.workers = workers
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="refcheck-nli")
        process_default = torch.get_num_threads()
        started = threading.Barrier(workers)

        def pin(_: int) -> None:
            torch.set_num_threads(1)
            # Every worker blocks here until all exist, so the pool starts all its threads now.
            started.wait()

        list(self._executor.map(pin, range(workers)))
        torch.set_num_threads(process_default)

    def map(self, function: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """`function` over `items`, `workers` at a time, results in the order of `items`."""
        return self._executor.map(function, items)
