"""Hostile input for `refcheck collect`, sent to a receiver in a process of its own (the
real command), whose memory is read from /proc: bodies whose parse builds far more than their
size, chunked bodies in 1-byte chunks, many bodies in flight. Shared by
tests/integrations/otlp/test_receiver_memory.py and benchmarks/collect_memory.py."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import threading
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


class CollectProcess:
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


def in_threads(count: int, send: Callable[[int], int]) -> Counter[int]:
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


def reply_status(client: socket.socket) -> int:
    client.settimeout(120)
    try:
        head = client.recv(1 << 16)
    except OSError:
        return -1
    match = re.match(rb"HTTP/1.1 (\d+)", head)
    return int(match.group(1)) if match else -1


def chunked_one_byte(collector: CollectProcess) -> Counter[int]:
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
            return reply_status(client)

    return in_threads(4, send)


def bodies_in_flight(collector: CollectProcess) -> Counter[int]:
    """32 clients each send a 4 MiB body at once (valid spans, one trace each)."""
    body = _len_field(15, b"\0" * (BODY - 64)) + small_trace()  # a field no reader knows

    def send(_: int) -> int:
        return collector.post(body, PROTOBUF)

    return in_threads(32, send)


def small_trace() -> bytes:
    """An export of one span of a trace that never completes (its root never comes)."""
    span = _span_prefix() + _len_field(4, os.urandom(8)) + _len_field(5, b"waiting")
    return _len_field(1, _len_field(2, _len_field(2, span)))


HOSTILE_BODIES: dict[str, tuple[Callable[[], bytes], dict[str, str]]] = {
    "pb_empty_resource_spans": (pb_empty_resource_spans, PROTOBUF),
    "pb_empty_spans": (pb_empty_spans, PROTOBUF),
    "pb_array_of_empty_values": (pb_array_of_empty_values, PROTOBUF),
    "json_empty_objects": (json_empty_objects, JSON_TYPE),
    "json_empty_spans": (json_empty_spans, JSON_TYPE),
    "json_small_attributes": (json_small_attributes, JSON_TYPE),
}
