"""A receiver alone in a process, for measuring its memory: `python receiver_process.py
MAX_BUFFERED_BYTES MAX_BODY_BYTES` prints its port, then serves until stdin closes. Its sink
counts and checks nothing, so what the process holds is the receiver's own."""

from __future__ import annotations

import sys
from typing import Any

from refcheck_callbacks.integrations.otlp.launch import Receiver, ReceiverOptions
from refcheck_callbacks.integrations.otlp.traces import TraceLimits


class CountingSink:
    """An `AnswerSink` that only counts."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def submit(self, **fields: Any) -> bool:
        return False

    def _count(self, reason: Any, count: int = 1) -> None:
        self.counts[str(reason)] = self.counts.get(str(reason), 0) + count

    skipped = dropped = errored = _count


def main() -> None:
    limits = TraceLimits(max_buffered_bytes=int(sys.argv[1]), max_trace_age=3600, idle=3600)
    options = ReceiverOptions(port=0, limits=limits, max_body_bytes=int(sys.argv[2]))
    receiver = Receiver(CountingSink(), options).start()  # type: ignore[arg-type]
    print(receiver.server.port, flush=True)
    sys.stdin.read()
    receiver.stop()


if __name__ == "__main__":
    main()
