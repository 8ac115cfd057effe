"""`--max-buffered-bytes` bounds what the receiver really holds: with a 64 MiB bound, the
peak resident memory a receiver process gains stays within `FACTOR` times the bound (what
docs/collect.md states), whatever shape the attributes take, whatever a body's shape costs to
parse, however its bytes arrive and however many arrive at once. Measured as RSS, in a process
of its own (`receiver_process.py`, or the `refcheck collect` command itself), with traces that
never complete so that everything sent stays buffered until the bound pushes the oldest out."""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile_otlp import HOSTILE_BODIES, CollectProcess, bodies_in_flight, chunked_one_byte
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from otlp_export import new_trace_id

BOUND = 64 << 20
BODY = 4 << 20
SENT = 4 * BOUND
"""Estimated bytes sent per shape (by the receiver's own estimate): four times the bound."""
PROCESS = Path(__file__).with_name("receiver_process.py")
FACTOR = 1.5
"""Peak RSS growth, at most, per byte of `--max-buffered-bytes` (docs/collect.md)."""

pytestmark = pytest.mark.slow


def _kv(key: str, value: AnyValue) -> KeyValue:
    return KeyValue(key=key, value=value)


def _small_maps() -> AnyValue:
    items = [
        AnyValue(kvlist_value=KeyValueList(values=[_kv("a", AnyValue(int_value=1))]))
        for _ in range(64)
    ]
    return AnyValue(array_value=ArrayValue(values=items))


def _wide_chars() -> AnyValue:
    return AnyValue(string_value="\U0001f600" * 4096)


def _nested() -> AnyValue:
    value = AnyValue(string_value="x")
    for _ in range(7):
        value = AnyValue(array_value=ArrayValue(values=[value, value]))
    return value


def _numbers() -> AnyValue:
    return AnyValue(array_value=ArrayValue(values=[AnyValue(double_value=0.5)] * 256))


def _empty_maps() -> AnyValue:
    return AnyValue(array_value=ArrayValue(values=[AnyValue(kvlist_value=KeyValueList())] * 256))


SHAPES: dict[str, Callable[[], AnyValue]] = {
    "arrays_of_small_maps": _small_maps,
    "strings_of_4_byte_characters": _wide_chars,
    "nested_arrays": _nested,
    "arrays_of_numbers": _numbers,
    "arrays_of_empty_maps": _empty_maps,
}


def _body(value: AnyValue, keys: int) -> bytes:
    """One export request of one trace (no root: it never completes) of spans carrying
    `keys` attributes of `value`, about `BODY` bytes."""
    trace_id = new_trace_id()
    attributes = [_kv(f"input.k{n}", value) for n in range(keys)]
    one = Span(trace_id=trace_id, span_id=os.urandom(8), parent_span_id=os.urandom(8))
    one.attributes.extend(attributes)
    spans = max(1, min(1_500, BODY // one.ByteSize()))
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for _ in range(spans):
        span = scope.spans.add()
        span.CopyFrom(one)
        span.span_id = os.urandom(8)
    return request.SerializeToString()


def _vm(pid: int, field: str) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE)
    assert match is not None
    return int(match.group(1)) * 1024


def _stats(connection: http.client.HTTPConnection) -> dict[str, object]:
    connection.request("GET", "/v1/stats")
    reply = connection.getresponse()
    return dict(json.loads(reply.read()))


@pytest.mark.parametrize("shape", list(SHAPES))
def test_rss_growth_stays_within_the_stated_factor_of_the_bound(shape: str) -> None:
    process = subprocess.Popen(
        [sys.executable, str(PROCESS), str(BOUND), str(16 << 20)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        _stats(connection)  # warm: the loop, the decoding threads, the first imports
        baseline = _vm(process.pid, "VmRSS")
        estimated = 0
        while estimated < SENT:
            body = _body(SHAPES[shape](), keys=8)
            connection.request(
                "POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"}
            )
            reply = connection.getresponse()
            reply.read()
            assert reply.status == 200
            stats = _stats(connection)
            traces = stats["traces"]
            assert isinstance(traces, dict)
            buffered = stats["buffered_bytes"]
            assert isinstance(buffered, int) and buffered <= BOUND
            estimated = max(estimated, buffered) + (BOUND if traces.get("trace_overflow") else 0)
            if traces.get("trace_overflow", 0) >= 8:
                break
        growth = _vm(process.pid, "VmHWM") - baseline
        print(f"{shape}: RSS +{growth / 2**20:.1f} MiB for a {BOUND >> 20} MiB bound")
        assert traces.get("trace_overflow"), "the bound was reached"
        assert growth < FACTOR * BOUND, f"{growth / 2**20:.0f} MiB"
    finally:
        process.stdin.close()  # type: ignore[union-attr]
        process.wait(30)


@pytest.mark.parametrize("shape", list(HOSTILE_BODIES))
def test_a_body_costs_no_more_to_parse_than_is_reserved(shape: str) -> None:
    """4 MB bodies whose parse builds the most per byte (empty messages, empty JSON objects),
    each sent twice: answered (200, or refused 413 / 503 when their worst case cannot be
    reserved), and the process stays within the stated factor of the bound."""
    make, headers = HOSTILE_BODIES[shape]
    collector = CollectProcess()
    try:
        statuses = {collector.post(make(), headers) for _ in range(2)}
        growth = collector.vm("VmHWM") - collector.baseline
    finally:
        collector.stop()
    print(f"{shape}: RSS +{growth / 2**20:.1f} MiB for a {BOUND >> 20} MiB bound, {statuses}")
    assert statuses <= {200, 413, 503}
    assert growth < FACTOR * BOUND, f"{growth / 2**20:.0f} MiB"


def test_bodies_in_one_byte_chunks_and_many_at_once_stay_within_the_bound() -> None:
    """Four chunked bodies of 1 MiB sent in 1-byte chunks at once, then 32 bodies of 4 MB at
    once: every one taken or refused and counted once, the process within the stated factor
    of the bound."""
    collector = CollectProcess()
    try:
        chunked = chunked_one_byte(collector)
        in_flight = bodies_in_flight(collector)
        growth = collector.vm("VmHWM") - collector.baseline
        stats = collector.stats()
    finally:
        collector.stop()
    print(f"chunked {dict(chunked)}, in flight {dict(in_flight)}: RSS +{growth / 2**20:.1f} MiB")
    assert set(chunked) <= {400, 413, 503} and sum(chunked.values()) == 4
    assert sum(in_flight.values()) == 32 and in_flight[200] >= 1
    # refused 503, or cut off by a reset: a refused client's connection, lingering while it
    # still sends its body, is closed when a new connection needs its room (uncounted: its
    # request was), or one still sending is closed for a new one (counted `timeout`)
    assert all(status == 503 or status < 0 for status in in_flight if status != 200)
    rejected = stats["rejected_requests"]
    assert rejected.pop("malformed") == 4
    assert set(rejected) <= {"no_room", "timeout"}
    assert sum(rejected.values()) == 32 - in_flight[200]
    assert rejected["no_room"] >= in_flight[503]
    assert growth < FACTOR * BOUND, f"{growth / 2**20:.0f} MiB"
