"""`--forward`: the received export requests, passed on untouched to the next collector.

The receiver answers its client before forwarding, so a slow or absent downstream never slows
the app's exporter: each body waits in a queue bounded in bytes and is posted by one thread
(`downstream.Downstream.post`: one deadline, a bounded read, no redirects), with its original
content type and encoding. Every body is forwarded or handed to `lost` with its
`ForwardReason` (the collector counts it for `/v1/stats` and the metrics, and logs it,
rate-limited): one that does not fit the queue, one the downstream refuses, answers garbage or
does not answer in time, one still queued when the receiver stops. Whatever the downstream
does, the thread goes on to the next body, so exports forward again once it recovers.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from refcheck_callbacks.contract.reasons import ForwardReason
from refcheck_callbacks.integrations.otlp.downstream import Downstream, NotForwarded
from refcheck_callbacks.support.logs import logger

Lost = Callable[[ForwardReason, str], None]


class Forwarder:
    def __init__(
        self,
        url: str,
        lost: Lost,
        max_queued_bytes: int = 64 << 20,
        timeout: float = 10.0,
    ) -> None:
        """`ConfigurationError` for a `url` that is not http(s)."""
        self.downstream = Downstream.parse(url)
        self.url = url
        self.max_queued_bytes = max_queued_bytes
        self.timeout = timeout
        self.forwarded = 0
        self._lost = lost
        self._queue: deque[tuple[bytes, dict[str, str]]] = deque()
        self._queued_bytes = 0
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="refcheck-forward", daemon=True)
        self._thread.start()

    def put(self, body: bytes, content_type: str, encoding: str | None) -> None:
        headers = {"Content-Type": content_type}
        if encoding:
            headers["Content-Encoding"] = encoding
        with self._lock:
            fits = not self._closed and self._queued_bytes + len(body) <= self.max_queued_bytes
            if fits:
                self._queue.append((body, headers))
                self._queued_bytes += len(body)
                self._ready.notify()
        if not fits:
            self._count_lost(
                ForwardReason.QUEUE_FULL,
                f"{len(body)} bytes for {self.url} did not fit the forwarding queue "
                f"({self.max_queued_bytes} bytes)",
            )

    def _run(self) -> None:
        while (item := self._next()) is not None:
            self._post(*item)

    def _next(self) -> tuple[bytes, dict[str, str]] | None:
        """The next body to post, waiting for one; None once closed and empty."""
        with self._lock:
            while not self._queue and not self._closed:
                self._ready.wait()
            if not self._queue:
                return None
            body, headers = self._queue.popleft()
            self._queued_bytes -= len(body)
            return body, headers

    def _post(self, body: bytes, headers: dict[str, str]) -> None:
        try:
            self.downstream.post(body, headers, self.timeout)
        except NotForwarded as lost:
            self._count_lost(lost.reason, str(lost))
            return
        except Exception as exc:  # anything else a downstream provokes must not stop the thread
            self._count_lost(ForwardReason.FAILED, f"forwarding to {self.url} raised {exc!r}")
            return
        with self._lock:
            self.forwarded += 1

    def _count_lost(self, reason: ForwardReason, detail: str) -> None:
        try:
            self._lost(reason, detail)
        except Exception:  # a failing count must not stop the thread either
            logger.exception("refcheck collect: counting a body not forwarded failed")

    def close(self, timeout: float = 5.0) -> None:
        """Post what is queued (within `timeout`), count the rest `shutdown`, then stop."""
        with self._lock:
            self._closed = True
            self._ready.notify()
        self._thread.join(timeout)
        with self._lock:
            left = len(self._queue)
            self._queue.clear()
            self._queued_bytes = 0
        for _ in range(left):
            self._count_lost(
                ForwardReason.SHUTDOWN, f"the receiver stopped before posting to {self.url}"
            )
