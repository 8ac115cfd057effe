"""What `refcheck collect` really holds for hostile clients: peak RSS of the receiver's own
process (`VmHWM` less `VmRSS` before the case, from /proc), against `--max-buffered-bytes`,
with the counts `/v1/stats` gives after each case.

Each case starts a fresh `refcheck collect` process (`--max-buffered-bytes 64MiB`, 16 MiB
bodies, traces that never complete, nothing checked) and sends one shape of hostile input:

- bodies whose parse builds far more than their size: protobuf of empty resource spans, of
  empty spans, of one span with an array of empty values; OTLP/JSON of empty objects, of
  empty spans, of small attributes (4 MiB each, sent `--repeat` times);
- chunked bodies in 1-byte chunks, four at once; 32 bodies of 4 MiB in flight at once;
- a gzip body of 16 KB that expands to almost 16 MiB of zeros, after 2,000 traces wait, at
  the default bound (how many it evicts); a gzip body of two members (how many spans are
  taken);
- requests with oversized heads from more clients than `--max-connections` (counts per
  request).

    flock /tmp/cpu.lock python benchmarks/collect_memory.py [--json out.json] [--case NAME]

Run it against another tree (the figures before a change) with `PYTHONPATH=that/tree`.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

BOUND = 64 << 20
BODY = 4_000_000
"""Bytes per body: under 4 MiB, so that the old reservation (16 times the body) fit the bound."""
MAX_BODY = 16 << 20
PROTOBUF = {"Content-Type": "application/x-protobuf"}
JSON_TYPE = {"Content-Type": "application/json"}


class Collector:
    """A `refcheck collect` process of its own."""

    def __init__(self, bound: int = BOUND) -> None:
        command = [
            sys.executable, "-m", "refcheck_callbacks.cli", "collect", "--port", "0",
            "--grpc-port", "off", "--sample-rate", "0", "--idle", "3600",
            "--max-trace-age", "3600", "--max-buffered-bytes", str(bound),
            "--max-body-bytes", str(MAX_BODY), "--placement", "thread",
            "--request-timeout", "120",
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        match = re.search(r":(\d+)/v1/traces", line)
        assert match is not None, line
        self.port = int(match.group(1))
        self.stats()  # warm: the loop, the decoding thread
        self.bound = bound
        self.baseline = self.vm("VmRSS")

    def vm(self, field: str) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        match = re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE)
        assert match is not None
        return int(match.group(1)) * 1024

    def stats(self) -> dict[str, Any]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        connection.request("GET", "/v1/stats")
        return dict(json.loads(connection.getresponse().read()))

    def post(self, body: bytes, headers: dict[str, str]) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            connection.request("POST", "/v1/traces", body, headers)
            reply = connection.getresponse()
            reply.read()
            return reply.status
        except (OSError, http.client.HTTPException) as exc:
            return -len(type(exc).__name__)  # a connection error, not a status
        finally:
            connection.close()

    def stop(self) -> str:
        self.process.terminate()
        _, errors = self.process.communicate(timeout=60)
        return errors


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _len_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _span_prefix() -> bytes:
    return _len_field(1, os.urandom(16)) + _len_field(2, os.urandom(8))


def pb_empty_resource_spans() -> bytes:
    return b"\x0a\x00" * (BODY // 2)


def pb_empty_spans() -> bytes:
    return _len_field(1, _len_field(2, b"\x12\x00" * (BODY // 2 - 8)))


def pb_array_of_empty_values() -> bytes:
    values = _len_field(5, b"\x0a\x00" * (BODY // 2 - 32))
    attribute = _len_field(1, b"input.value") + _len_field(2, values)
    span = _span_prefix() + _len_field(4, os.urandom(8)) + _len_field(9, attribute)
    return _len_field(1, _len_field(2, _len_field(2, span)))


def json_empty_objects() -> bytes:
    return b'{"resourceSpans":[' + b",".join([b"{}"] * (BODY // 3)) + b"]}"


def json_empty_spans() -> bytes:
    spans = b",".join([b"{}"] * (BODY // 3))
    return b'{"resourceSpans":[{"scopeSpans":[{"spans":[' + spans + b"]}]}]}"


def json_small_attributes() -> bytes:
    pair = b'{"key":"input.k","value":{"intValue":"1"}}'
    span = (
        b'{"traceId":"' + os.urandom(16).hex().encode() + b'","spanId":"'
        + os.urandom(8).hex().encode() + b'","parentSpanId":"' + os.urandom(8).hex().encode()
        + b'","attributes":[' + b",".join([pair] * (BODY // len(pair) - 4)) + b"]}"
    )  # fmt: skip
    return b'{"resourceSpans":[{"scopeSpans":[{"spans":[' + span + b"]}]}]}"


def _bodies(make: Callable[[], bytes], headers: dict[str, str]) -> Callable[..., dict[str, Any]]:
    def run(collector: Collector, repeat: int) -> dict[str, Any]:
        return {"statuses": Counter(collector.post(make(), headers) for _ in range(repeat))}

    return run


def _in_threads(count: int, send: Callable[[int], int]) -> Counter[int]:
    statuses: Counter[int] = Counter()
    lock = threading.Lock()

    def one(index: int) -> None:
        status = send(index)
        with lock:
            statuses[status] += 1

    threads = [threading.Thread(target=one, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


def _status(client: socket.socket) -> int:
    client.settimeout(120)
    try:
        head = client.recv(1 << 16)
    except OSError:
        return -1
    match = re.match(rb"HTTP/1.1 (\d+)", head)
    return int(match.group(1)) if match else -1


def chunked_one_byte(collector: Collector, repeat: int) -> dict[str, Any]:
    """Four bodies of 1 MiB at once, each sent in 1-byte chunks."""

    def send(_: int) -> int:
        with socket.create_connection(("127.0.0.1", collector.port)) as client:
            client.sendall(
                b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                b"Content-Type: application/x-protobuf\r\n\r\n"
            )
            piece = b"1\r\n\x0a\r\n" * 4096
            for _ in range((1 << 20) // 4096):
                client.sendall(piece)
            client.sendall(b"0\r\n\r\n")
            return _status(client)

    return {"statuses": _in_threads(4, send)}


def bodies_in_flight(collector: Collector, repeat: int) -> dict[str, Any]:
    """32 clients each send a 4 MiB body at once (valid spans, one trace each)."""
    padding = _len_field(15, b"\0" * (BODY - 64))  # a field no reader knows: skipped
    body = padding + _small_trace()

    def send(_: int) -> int:
        return collector.post(body, PROTOBUF)

    return {"statuses": _in_threads(32, send)}


def _small_trace() -> bytes:
    span = _span_prefix() + _len_field(4, os.urandom(8)) + _len_field(5, b"waiting")
    return _len_field(1, _len_field(2, _len_field(2, span)))


def gzip_bomb_after_waiting_traces(collector: Collector, repeat: int) -> dict[str, Any]:
    """At the default bound (256 MiB), where the old reservation of 16 times the body made
    room for almost 16 MiB of zeros by evicting everything."""
    for _ in range(2_000):
        assert collector.post(_small_trace(), PROTOBUF) == 200
    bomb = gzip.compress(b"\0" * (MAX_BODY - 1024), 9)
    status = collector.post(bomb, {**PROTOBUF, "Content-Encoding": "gzip"})
    return {"statuses": Counter([status]), "bomb_bytes": len(bomb)}


def two_member_gzip(collector: Collector, repeat: int) -> dict[str, Any]:
    body = gzip.compress(_small_trace()) + gzip.compress(_small_trace())
    return {"statuses": Counter([collector.post(body, {**PROTOBUF, "Content-Encoding": "gzip"})])}


def oversized_heads(collector: Collector, repeat: int) -> dict[str, Any]:
    """1,280 requests whose head (100 KiB) passes h11's limit, 64 clients at a time."""
    head = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (100 << 10) + b"\r\n\r\n"

    def send(_: int) -> int:
        statuses = []
        for _ in range(20):
            with socket.create_connection(("127.0.0.1", collector.port)) as client:
                client.sendall(head)
                statuses.append(_status(client))
        return statuses[-1]

    statuses = _in_threads(64, send)
    time.sleep(3)  # the lingering connections close
    return {"statuses": statuses, "requests": 1_280}


CASES: dict[str, Callable[[Collector, int], dict[str, Any]]] = {
    "pb_empty_resource_spans": _bodies(pb_empty_resource_spans, PROTOBUF),
    "pb_empty_spans": _bodies(pb_empty_spans, PROTOBUF),
    "pb_array_of_empty_values": _bodies(pb_array_of_empty_values, PROTOBUF),
    "json_empty_objects": _bodies(json_empty_objects, JSON_TYPE),
    "json_empty_spans": _bodies(json_empty_spans, JSON_TYPE),
    "json_small_attributes": _bodies(json_small_attributes, JSON_TYPE),
    "chunked_1_byte_x4": chunked_one_byte,
    "bodies_in_flight_x32": bodies_in_flight,
    "gzip_bomb_after_2000_traces": gzip_bomb_after_waiting_traces,
    "two_member_gzip": two_member_gzip,
    "oversized_heads_x1280": oversized_heads,
}


BOUNDS = {"gzip_bomb_after_2000_traces": 256 << 20}
"""Cases run at another bound than `BOUND`."""


def measure(name: str, repeat: int) -> dict[str, Any]:
    collector = Collector(BOUNDS.get(name, BOUND))
    try:
        outcome = CASES[name](collector, repeat)
        growth = collector.vm("VmHWM") - collector.baseline
        stats = collector.stats()
    finally:
        errors = collector.stop()
    return {
        "case": name,
        "rss_growth_mib": round(growth / 2**20, 1),
        "bound_mib": collector.bound >> 20,
        "of_bound": round(growth / collector.bound, 2),
        "statuses": dict(outcome.pop("statuses")),
        "rejected": stats.get("rejected_requests"),
        "traces": stats.get("traces"),
        "spans_received": stats["spans"]["received"],
        "open_traces": stats.get("open_traces"),
        "tracebacks": errors.count("Traceback"),
        **outcome,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", choices=list(CASES))
    parser.add_argument("--repeat", type=int, default=2, help="bodies sent per body case")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    for name in args.case or list(CASES):
        row = measure(name, args.repeat)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
