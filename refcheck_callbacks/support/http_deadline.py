"""An HTTP fetch that ends at one deadline, from connecting to the last byte.

urllib's `timeout` bounds each socket operation, not the fetch: a server that sends two bytes a
second answers every read in time and holds a 3 MB download for weeks. `DeadlineFetch` opens
URLs through urllib (proxies and TLS as usual) and, when its time is up, shuts down every
connection it opened, which ends a read blocked in `recv` at once, in any thread.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import socket
import threading
import urllib.request
from types import TracebackType
from typing import Any


class DeadlineFetch:
    """`with DeadlineFetch(seconds) as fetch: fetch.open(url)`; `expired` says whether the
    deadline ended it. Leaving the block closes what the deadline holds."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._lock = threading.Lock()
        self._connections: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._opener = urllib.request.build_opener(_WatchedHandler(self))

    def __enter__(self) -> DeadlineFetch:
        self._timer.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._timer.cancel()
        with self._lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()

    def open(self, url: str) -> http.client.HTTPResponse:
        """The response to GET `url`; each socket operation also waits at most `seconds`."""
        response: http.client.HTTPResponse = self._opener.open(url, timeout=self.seconds)
        return response

    def watch(self, connected: socket.socket) -> None:
        """Take a connection into the deadline. A duplicate of its descriptor is kept: shutting
        that down ends the connection whatever wraps it (TLS) and whoever reads it."""
        duplicate = socket.fromfd(connected.fileno(), connected.family, connected.type)
        with self._lock:
            self._connections.append(duplicate)
            if self.expired:
                _shut(duplicate)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for connection in self._connections:
                _shut(connection)


def _shut(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by the peer: nothing left to end
        connection.shutdown(socket.SHUT_RDWR)


class _WatchedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args: Any, fetch: DeadlineFetch, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fetch = fetch

    def connect(self) -> None:
        super().connect()
        self._fetch.watch(self.sock)


class _WatchedHTTPSConnection(_WatchedHTTPConnection, http.client.HTTPSConnection):
    """`connect` runs HTTPS's (TCP, proxy tunnel, TLS), then watches the socket."""


class _WatchedHandler(urllib.request.HTTPHandler, urllib.request.HTTPSHandler):
    """Opens http and https URLs on watched connections (it replaces both default handlers)."""

    def __init__(self, fetch: DeadlineFetch) -> None:
        super().__init__()
        self._fetch = fetch

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_WatchedHTTPConnection, fetch=self._fetch), req)

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_WatchedHTTPSConnection, fetch=self._fetch), req)
