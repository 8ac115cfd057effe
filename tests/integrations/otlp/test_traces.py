"""Trace assembly on a clock of the test's own: a trace is complete once its root arrived and
no span came for `idle` seconds; a span after that is late, not a new trace."""

from __future__ import annotations

import os

from otlp_export import export, new_trace_id, span
from otlp_export import received as received_spans

from refcheck_callbacks.contract.reasons import DropReason
from refcheck_callbacks.integrations.otlp.received import ReceivedSpan
from refcheck_callbacks.integrations.otlp.traces import OpenTrace, TraceAssembly, TraceLimits


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def received(*spans: object) -> list[ReceivedSpan]:
    return received_spans(export(*spans))  # type: ignore[arg-type]


def test_a_trace_completes_after_idle_seconds_of_quiet_once_its_root_arrived() -> None:
    clock = Clock()
    complete: list[OpenTrace] = []
    dropped: list[DropReason] = []
    assembly = TraceAssembly(
        TraceLimits(idle=5.0, max_trace_age=100.0),
        complete.append,
        lambda _, reason: dropped.append(reason),
        clock,
    )
    trace_id, root = new_trace_id(), os.urandom(8)
    assembly.add(received(span(trace_id, os.urandom(8), root)))  # a child first
    clock.now = 10.0
    assert assembly.sweep() == 0  # quiet, but no root yet: it waits
    assembly.add(received(span(trace_id, root)))
    clock.now = 14.0
    assembly.add(received(span(trace_id, os.urandom(8), root)))  # late child resets the quiet
    clock.now = 18.0
    assert assembly.sweep() == 0
    clock.now = 19.0
    assert assembly.sweep() == 1
    [trace] = complete
    assert len(trace.spans) == 3 and trace.root is not None and trace.root.parent_id is None
    assert assembly.open_traces == 0 and assembly.buffered_bytes == 0
    assembly.add(received(span(trace_id, os.urandom(8), root)))
    assert assembly.open_traces == 0 and assembly.spans.late == 1
    assert dropped == []
