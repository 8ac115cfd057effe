"""`--forward`: the received export requests, passed on untouched to the next collector.

The receiver answers its client before forwarding, so a slow or absent downstream never slows
the app's exporter: each body waits in a queue bounded in bytes and is posted by one thread,
with its original content type and encoding. A body that does not fit, or that the downstream
refuses or does not answer, is handed to `lost` with its `ForwardReason` (the collector counts
it for `/v1/stats` and the metrics, and logs it, rate-limited).
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable

from refcheck_callbacks.contract.reasons import ForwardReason


class Forwarder:
    def __init__(
        self,
        url: str,
        lost: Callable[[ForwardReason, str], None],
        max_queued_bytes: int = 64 << 20,
        timeout: float = 10.0,
    ) -> None:
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
            self._lost(
                ForwardReason.QUEUE_FULL,
                f"{len(body)} bytes for {self.url} did not fit the forwarding queue "
                f"({self.max_queued_bytes} bytes)",
            )

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._ready.wait()
                if not self._queue:
                    return
                body, headers = self._queue.popleft()
                self._queued_bytes -= len(body)
            self._post(body, headers)

    def _post(self, body: bytes, headers: dict[str, str]) -> None:
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                reply.read(1 << 16)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            self._lost(ForwardReason.FAILED, f"forwarding to {self.url} failed: {exc}")
            return
        with self._lock:
            self.forwarded += 1

    def close(self, timeout: float = 5.0) -> None:
        """Post what is queued (within `timeout`), then stop."""
        with self._lock:
            self._closed = True
            self._ready.notify()
        self._thread.join(timeout)
