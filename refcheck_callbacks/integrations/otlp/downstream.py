"""One POST to `--forward`'s downstream, with one deadline and a bounded read of its reply.

The downstream is another process the receiver does not control, so nothing it answers may
stop or stall the forwarder: the request, from connecting to the reply's status, must end
within one `timeout` (a peer dripping its reply a byte at a time is cut off at the deadline,
not at the deadline of each read), at most `MAX_REPLY_HEAD_BYTES` of the reply are read (h11
refuses a longer head, whatever its line lengths or count of headers), and the reply's body
is never read: a 2xx status is all the forwarder needs. A redirect is not followed (that would
send the app's spans where no one configured them to go). Every way it can end other than a
2xx raises `NotForwarded` with its `ForwardReason`.
"""

from __future__ import annotations

import socket
import ssl
import time
import urllib.parse
from dataclasses import dataclass

import h11

from refcheck_callbacks.contract.reasons import ForwardReason
from refcheck_callbacks.errors import ConfigurationError

MAX_REPLY_HEAD_BYTES = 64 << 10
"""The most of a reply read before its status and headers are whole."""
_READ = 16 << 10
"""Bytes read from the downstream at a time."""
_HTTP = b"HTTP/"
"""How every reply starts (the status line)."""


class NotForwarded(Exception):
    """The downstream did not take an export request; `reason` says how it ended."""

    def __init__(self, reason: ForwardReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


@dataclass(frozen=True)
class Downstream:
    """Where `--forward` posts: an http or https URL, read once when the receiver starts."""

    url: str
    secure: bool
    host: str
    port: int
    target: str
    """The path and query posted to."""

    @classmethod
    def parse(cls, url: str) -> Downstream:
        """`ConfigurationError` for anything but an http(s) URL with a host."""
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise ConfigurationError(f"--forward {url!r} is not a URL: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(
                f"--forward takes an http:// or https:// URL with a host, not {url!r}"
            )
        secure = parts.scheme == "https"
        target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
        return cls(url, secure, parts.hostname, port or (443 if secure else 80), target)

    def post(self, body: bytes, headers: dict[str, str], timeout: float) -> int:
        """POST `body`; its 2xx status, else `NotForwarded`."""
        deadline = time.monotonic() + timeout
        try:
            with self._connect(deadline) as connection:
                client = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_REPLY_HEAD_BYTES)
                head = client.send(self._head(len(body), headers))
                _send(connection, head, body, deadline)
                status = _reply_status(connection, client, deadline)
        except TimeoutError:
            raise NotForwarded(
                ForwardReason.TIMEOUT, f"{self.url} gave no whole reply within {timeout:g} s"
            ) from None
        except h11.RemoteProtocolError as exc:
            raise NotForwarded(
                ForwardReason.BAD_REPLY, f"{self.url} answered something not HTTP/1.1: {exc}"
            ) from None
        except OSError as exc:  # refused, reset, unreachable, a failed TLS handshake
            raise NotForwarded(ForwardReason.FAILED, f"{self.url}: {exc}") from None
        if not 200 <= status < 300:
            raise NotForwarded(
                ForwardReason.REFUSED,
                f"{self.url} answered {status}"
                + (" (a redirect, not followed)" if 300 <= status < 400 else ""),
            )
        return status

    def _connect(self, deadline: float) -> socket.socket:
        connection = socket.create_connection((self.host, self.port), _left(deadline))
        if not self.secure:
            return connection
        connection.settimeout(_left(deadline))
        context = ssl.create_default_context()
        return context.wrap_socket(connection, server_hostname=self.host)

    def _head(self, length: int, headers: dict[str, str]) -> h11.Request:
        default_port = 443 if self.secure else 80
        host = self.host if self.port == default_port else f"{self.host}:{self.port}"
        fields = [("Host", host), ("Content-Length", str(length)), ("Connection", "close")]
        return h11.Request(method="POST", target=self.target, headers=[*fields, *headers.items()])


def _send(connection: socket.socket, head: bytes, body: bytes, deadline: float) -> None:
    """Send the request, all of it by the deadline (`sendall`'s timeout is for the whole call).
    A downstream that answers early and stops reading (a 413 before the body) is still heard:
    the reply is read whether or not the body went."""
    try:
        connection.settimeout(_left(deadline))
        connection.sendall(head)
        connection.sendall(body)
    except (BrokenPipeError, ConnectionResetError):
        pass


def _reply_status(connection: socket.socket, client: h11.Connection, deadline: float) -> int:
    """The status of the first final reply (1xx ones are passed over), read within the
    deadline and `MAX_REPLY_HEAD_BYTES`; `h11.RemoteProtocolError` for a reply that is not
    HTTP (told by its first bytes, not after a whole head of garbage) or a longer head."""
    read = b""  # the reply's first bytes, up to the length of `_HTTP`
    taken = 0
    while True:
        event = client.next_event()
        if isinstance(event, h11.Response):
            return int(event.status_code)
        if event is not h11.NEED_DATA:
            continue  # a 1xx reply
        if taken >= MAX_REPLY_HEAD_BYTES:
            raise h11.RemoteProtocolError(f"a reply head over {MAX_REPLY_HEAD_BYTES} bytes")
        connection.settimeout(_left(deadline))
        data = connection.recv(min(_READ, MAX_REPLY_HEAD_BYTES - taken))
        if not data:
            raise ConnectionResetError("the downstream closed the connection without a reply")
        taken += len(data)
        if len(read) < len(_HTTP):
            read += data[: len(_HTTP) - len(read)]
            if not _HTTP.startswith(read):
                raise h11.RemoteProtocolError(f"a reply starting {read!r}")
        client.receive_data(data)


def _left(deadline: float) -> float:
    """Seconds to the deadline; `TimeoutError` once it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left
