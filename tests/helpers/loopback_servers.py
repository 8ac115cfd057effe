"""Misbehaving servers on 127.0.0.1 for the fault suite: real sockets, no mocks.

- `closed_port()`: a port nothing listens on (connections are refused), held bound;
- `BlackHole`: accepts connections and never answers (an endpoint behind a dead proxy);
- `RawHTTPServer`: answers every request with bytes a test chooses, at a rate it chooses (a
  slow drip of a valid reply, a 10 MB body, garbage), optionally its first bytes at once (the
  head of a reply whose body then trickles);
- `HugeReplyServer`: answers with a body of any size, made as it is sent (a 1.5 GB reply costs
  the server one chunk), and counts what the client took before it hung up.

Each runs on daemon threads and closes with `close()`.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

_HELD: list[socket.socket] = []
"""The sockets behind `closed_port`, held until the tests end."""


def closed_port() -> int:
    """A loopback port that refuses connections: bound and never listening, held as long as
    the tests run, so that no other process can take it and answer (a port released again,
    as this once was, can be)."""
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    _HELD.append(held)
    return int(held.getsockname()[1])


class _Listener:
    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self._closed = threading.Event()
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._socket.getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self.connections.append(connection)
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        """Hold the connection open and answer nothing."""
        self._closed.wait()

    def close(self) -> None:
        self._closed.set()
        self._socket.close()
        for connection in self.connections:
            connection.close()


class BlackHole(_Listener):
    """Accepts every connection, reads nothing, answers nothing."""


def http_reply(
    body: bytes, status: str = "200 OK", content_type: str = "application/json"
) -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


class RawHTTPServer(_Listener):
    """Reads a request's head and body, then sends the first `at_once` bytes of
    `reply(request_bytes)` and the rest in chunks of `chunk` bytes, `pause` seconds apart."""

    def __init__(
        self,
        reply: Callable[[bytes], bytes],
        chunk: int = 1 << 16,
        pause: float = 0.0,
        at_once: int = 0,
    ) -> None:
        self.reply = reply
        self.chunk = chunk
        self.pause = pause
        self.at_once = at_once
        self.requests = 0
        super().__init__()

    def _serve(self, connection: socket.socket) -> None:
        try:
            request = self._read_request(connection)
            self.requests += 1
            data = self.reply(request)
            connection.sendall(data[: self.at_once])
            for start in range(self.at_once, len(data), self.chunk):
                if self._closed.is_set():
                    return
                connection.sendall(data[start : start + self.chunk])
                if self.pause:
                    time.sleep(self.pause)
        except OSError:
            return
        finally:
            connection.close()

    @staticmethod
    def _read_request(connection: socket.socket) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            piece = connection.recv(65536)
            if not piece:
                return data
            data += piece
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(body) < length:
            piece = connection.recv(65536)
            if not piece:
                break
            body += piece
        return head + b"\r\n\r\n" + body


class HugeReplyServer(_Listener):
    """Reads a request, then sends `head` and `size` bytes of `fill`, one chunk at a time;
    `sent` is how many of them the client's socket took before it hung up."""

    def __init__(self, head: bytes, size: int, fill: bytes = b" ", chunk: int = 1 << 16) -> None:
        self.head = head
        self.size = size
        self.piece = fill * (chunk // len(fill))
        self.sent = 0
        super().__init__()

    def _serve(self, connection: socket.socket) -> None:
        try:
            RawHTTPServer._read_request(connection)
            connection.sendall(self.head)
            while self.sent < self.size and not self._closed.is_set():
                piece = self.piece[: self.size - self.sent]
                connection.sendall(piece)
                self.sent += len(piece)
        except OSError:
            return
        finally:
            connection.close()
