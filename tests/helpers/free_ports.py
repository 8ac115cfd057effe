"""Ports for the servers tests start, without the race of a port picked free and bound later.

A port picked free (bound to 0, read, released) and bound later by another process can be
taken in between, by any process's port-0 bind or outgoing connection: the kernel hands those
ports out of its ephemeral range, and a test run makes thousands (issue 47: a Ray Serve proxy
could not bind the `127.0.0.1:42327` its test had picked). The ways, best first:

- the server binds port 0 itself and says which port it got: `OutputWatch.port` reads it from
  the server's output (uvicorn, gunicorn, Prometheus and our own helper servers say it);
- where a server cannot (Ray Serve's proxy, Phoenix), `start_on_a_port` gives it a port below
  the ephemeral range (`unassigned_ports`: nothing bound to 0 or connecting out is given
  one), and starts it again on another should something hold that one all the same;
- a port that must refuse connections stays bound, never listening, as long as the tests run
  (`loopback_servers.closed_port`).
"""

from __future__ import annotations

import random
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TypeVar

T = TypeVar("T")

_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 20_000
"""Above Ray's worker ports (10002-19999 by default) and the well-known services."""
ATTEMPTS = 5


def _ephemeral_start() -> int:
    try:
        return int(_EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def unassigned_ports() -> Iterator[int]:
    """Ports free now, in random order, from below the kernel's ephemeral range (so that no
    port-0 bind or outgoing connection is given one while a server starts on it)."""
    candidates = list(range(_LOWEST, _ephemeral_start()))
    random.shuffle(candidates)
    for port in candidates:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        yield port


class PortTaken(Exception):
    """A server could not bind the port it was given: another process holds it."""


def start_on_a_port(
    start: Callable[[int], T], ports: Iterator[int] | None = None, attempts: int = ATTEMPTS
) -> tuple[T, int]:
    """`start(port)` on an unassigned port, again on another where it raises `PortTaken`
    (at most `attempts` times); what it returned and the port."""
    ports = unassigned_ports() if ports is None else ports
    for attempt in range(attempts):
        port = next(ports)
        try:
            return start(port), port
        except PortTaken:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


class OutputWatch:
    """A child process's output, read as it comes on a thread of its own (a pipe left unread
    would fill and stop the child), kept for the test to look at."""

    def __init__(self, stream: IO[str]) -> None:
        self._lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            with self._changed:
                self._lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._lines.append("")  # the end
            self._changed.notify_all()

    def text(self, timeout: float = 10.0) -> str:
        """Everything read so far (all of it, once the process ended and its pipe closed)."""
        self._thread.join(timeout)
        with self._changed:
            return "".join(self._lines)

    def port(self, pattern: str, timeout: float = 180.0) -> int:
        """The port the child said it listens on: the group `port` of `pattern` in its
        output, once a line matches (`AssertionError` when it ends or `timeout` passes
        first)."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        with self._changed:
            while True:
                for line in self._lines[seen:]:
                    found = regex.search(line)
                    if found:
                        return int(found["port"])
                seen = len(self._lines)
                ended = bool(self._lines) and self._lines[-1] == ""
                left = deadline - time.monotonic()
                if ended or left <= 0:
                    output = "".join(self._lines)[-3000:]
                    raise AssertionError(f"no port in the server's output:\n{output}")
                self._changed.wait(min(left, 0.5))
