"""A checker or extractor as a Ray Serve deployment: every caller's batch in one model call.

`@serve.batch` gathers the calls that reach a replica within `batch_wait_timeout_s` (at most
`max_batch_size` calls: callers, not claims; a checker packs its own model batches), and the
replica makes one `check` (or `extract`) call on all their inputs, then hands each caller its
own outputs (`remote.answering.ComponentRunner`, which also isolates a failing request). Every
batch is recorded: callers, calls and inputs, in `stats()` and as Ray Serve metrics.

Callers take turns. A call is answered in parts of at most `max_caller_inputs` inputs, and a
caller has one part at a time waiting or running (`CallerTurns`), so a batch holds one part of
each caller at most: a caller that sends 100,000 claims holds the replica for one part, then
the others' parts go in the next batch beside its next one.

Batching settings are the deployment's `user_config` (`BatchSettings`), so a Serve config can
change them on a running service without restarting the replicas.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from ray import serve
from ray.serve.metrics import Counter, Histogram

from refcheck_callbacks.exporters import names
from refcheck_callbacks.remote.answering import ComponentRunner, Role
from refcheck_callbacks.remote.wire import WireCall, WireReply
from refcheck_callbacks.serve.loopback import replica_server_on_node_address

_BATCH_BOUNDARIES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]


class BatchSettings(BaseModel):
    """How a component's replica gathers calls (the deployment's `user_config`)."""

    model_config = ConfigDict(extra="forbid")

    max_batch_size: int = Field(default=16, ge=1)
    """Calls (one per caller's engine batch) merged into one component call at most."""
    batch_wait_timeout_s: float = Field(default=0.01, ge=0.0)
    """How long the first call of a batch waits for others."""
    max_caller_inputs: int = Field(default=256, ge=1)
    """A caller's inputs in one component call at most: a larger call is answered in parts
    of this size, taking turns with other callers' parts."""


class BatchRecord(BaseModel):
    """One component call made by the service."""

    calls: int
    inputs: int
    """Claims for a checker, answers for an extractor."""
    clients: list[str]
    """The distinct callers whose inputs were in it (their `client` ids)."""
    seconds: float
    failed_requests: int = 0
    """Requests that failed even alone, after the merged call raised."""


class BatchLog:
    """The latest batches, kept bounded, with running totals."""

    def __init__(self, keep: int = 256) -> None:
        self.recent: deque[BatchRecord] = deque(maxlen=keep)
        self.batches = 0
        self.calls = 0
        self.inputs = 0
        self.largest = 0

    def add(self, record: BatchRecord) -> None:
        self.recent.append(record)
        self.batches += 1
        self.calls += record.calls
        self.inputs += record.inputs
        self.largest = max(self.largest, record.inputs)

    def snapshot(self) -> dict[str, Any]:
        return {
            "batches": self.batches,
            "calls": self.calls,
            "inputs": self.inputs,
            "largest_batch": self.largest,
            "recent": [record.model_dump() for record in self.recent],
        }


class CallerTurns:
    """A caller's parts one at a time, in the order they came (callers are told apart by their
    `client` id; those that send none share one turn). A caller's lock goes once nobody holds
    or waits for it, so the map holds only the callers in flight."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def turn(self, caller: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(caller, (asyncio.Lock(), 0))
        self._locks[caller] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[caller]
            if users == 1:
                del self._locks[caller]
            else:
                self._locks[caller] = (lock, users - 1)

    def __len__(self) -> int:
        """Callers with a part waiting or running."""
        return len(self._locks)


Metric = TypeVar("Metric", Counter, Histogram)


def _tagged(metric: Metric, tags: dict[str, str]) -> Metric:
    """The metric with our tags as defaults (a copy: Serve adds its own tags to the dict)."""
    metric.set_default_tags(dict(tags))
    return metric


class ComponentReplica:
    """One checker or extractor, built from its spec in each replica."""

    def __init__(self, role: str, spec: str, api_base: str | None = None) -> None:
        replica_server_on_node_address()
        self.work = ComponentRunner(Role(role), spec, api_base)
        self.role = self.work.role
        self.log = BatchLog()
        self.turns = CallerTurns()
        self.max_caller_inputs = BatchSettings().max_caller_inputs
        tags = {"role": self.role.value, "component": self.work.name}
        self._batch_inputs = _tagged(
            Histogram(
                names.SERVE_BATCH_INPUTS,
                description="Inputs (claims or answers) per component call made by the service.",
                boundaries=_BATCH_BOUNDARIES,
                tag_keys=tuple(tags),
            ),
            tags,
        )
        self._batch_calls = _tagged(
            Histogram(
                names.SERVE_BATCH_CALLS,
                description="Callers' calls merged into one component call.",
                boundaries=_BATCH_BOUNDARIES,
                tag_keys=tuple(tags),
            ),
            tags,
        )
        self._failed = _tagged(
            Counter(
                names.SERVE_FAILED_REQUESTS,
                description="Requests whose inputs failed in the component even alone.",
                tag_keys=tuple(tags),
            ),
            tags,
        )
        self.reconfigure(BatchSettings().model_dump())

    def reconfigure(self, config: dict[str, Any]) -> None:
        """Serve calls this with the deployment's `user_config`, at start and on changes."""
        settings = BatchSettings.model_validate(config or {})
        self.run_batch.set_max_batch_size(settings.max_batch_size)
        self.run_batch.set_batch_wait_timeout_s(settings.batch_wait_timeout_s)
        self.max_caller_inputs = settings.max_caller_inputs

    async def ready(self) -> str:
        """The component's name, once the replica is up (readiness): its component was built
        and preloaded in `__init__`, so a ready service's first call loads nothing."""
        return self.work.name

    def stats(self) -> dict[str, Any]:
        return {
            "role": self.role.value,
            "name": self.work.name,
            "callers_now": len(self.turns),
            **self.log.snapshot(),
        }

    async def answer(self, call: WireCall) -> WireReply:
        """The reply to a caller's call, its parts answered in turn with other callers'."""
        parts = call.parts(self.max_caller_inputs) if len(call) > self.max_caller_inputs else [call]
        replies: list[WireReply] = []
        for part in parts:
            async with self.turns.turn(call.client):
                replies.append(await self.run_batch(part))
        return replies[0].joined(replies[1:]) if len(replies) > 1 else replies[0]

    @serve.batch
    async def run_batch(self, calls: list[WireCall]) -> list[WireReply]:
        started = time.perf_counter()
        replies, failed = await self.work.answer(calls)
        self._record(calls, time.perf_counter() - started, failed)
        return replies

    def _record(self, calls: Sequence[WireCall], seconds: float, failed: int) -> None:
        inputs = sum(len(call) for call in calls)
        clients = sorted({call.client for call in calls})
        self.log.add(
            BatchRecord(
                calls=len(calls),
                inputs=inputs,
                clients=clients,
                seconds=seconds,
                failed_requests=failed,
            )
        )
        self._batch_inputs.observe(inputs)
        self._batch_calls.observe(len(calls))
        if failed:
            self._failed.inc(failed)


Component = serve.deployment(max_ongoing_requests=64, graceful_shutdown_timeout_s=10)(
    ComponentReplica
)
"""The deployment; `app.build_application` names it `Checker` or `Extractor`."""
