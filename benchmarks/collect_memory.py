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
import json
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from hostile_otlp import (
    BOUND,
    HOSTILE_BODIES,
    MAX_BODY,
    PROTOBUF,
    CollectProcess,
    bodies_in_flight,
    chunked_one_byte,
    in_threads,
    reply_status,
    small_trace,
)


def _bodies(make: Callable[[], bytes], headers: dict[str, str]) -> Callable[..., dict[str, Any]]:
    def run(collector: CollectProcess, repeat: int) -> dict[str, Any]:
        return {"statuses": Counter(collector.post(make(), headers) for _ in range(repeat))}

    return run


def gzip_bomb_after_waiting_traces(collector: CollectProcess, repeat: int) -> dict[str, Any]:
    """At the default bound (256 MiB), where the old reservation of 16 times the body made
    room for almost 16 MiB of zeros by evicting everything."""
    for _ in range(2_000):
        assert collector.post(small_trace(), PROTOBUF) == 200
    bomb = gzip.compress(b"\0" * (MAX_BODY - 1024), 9)
    status = collector.post(bomb, {**PROTOBUF, "Content-Encoding": "gzip"})
    return {"statuses": Counter([status]), "bomb_bytes": len(bomb)}


def two_member_gzip(collector: CollectProcess, repeat: int) -> dict[str, Any]:
    body = gzip.compress(small_trace()) + gzip.compress(small_trace())
    return {"statuses": Counter([collector.post(body, {**PROTOBUF, "Content-Encoding": "gzip"})])}


def oversized_heads(collector: CollectProcess, repeat: int) -> dict[str, Any]:
    """1,280 requests whose head (100 KiB) passes h11's limit, 64 clients at a time."""
    head = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (100 << 10) + b"\r\n\r\n"

    def send(_: int) -> int:
        statuses = []
        for _ in range(20):
            with socket.create_connection(("127.0.0.1", collector.port)) as client:
                client.sendall(head)
                statuses.append(reply_status(client))
        return statuses[-1]

    statuses = in_threads(64, send)
    time.sleep(3)  # the lingering connections close
    return {"statuses": statuses, "requests": 1_280}


CASES: dict[str, Callable[[CollectProcess, int], dict[str, Any]]] = {
    **{name: _bodies(*shape) for name, shape in HOSTILE_BODIES.items()},
    "chunked_1_byte_x4": lambda collector, _: {"statuses": chunked_one_byte(collector)},
    "bodies_in_flight_x32": lambda collector, _: {"statuses": bodies_in_flight(collector)},
    "gzip_bomb_after_2000_traces": gzip_bomb_after_waiting_traces,
    "two_member_gzip": two_member_gzip,
    "oversized_heads_x1280": oversized_heads,
}


BOUNDS = {"gzip_bomb_after_2000_traces": 256 << 20}
"""Cases run at another bound than `BOUND`."""


def measure(name: str, repeat: int) -> dict[str, Any]:
    collector = CollectProcess(BOUNDS.get(name, BOUND))
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
