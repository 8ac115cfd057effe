"""Result hooks for tests."""

from __future__ import annotations

from refcheck_callbacks import CheckRequest, CheckResult, RefCheckMonitor


class ResultSink:
    """An `on_result` hook that keeps every result."""

    def __init__(self) -> None:
        self.results: list[CheckResult] = []

    def __call__(self, result: CheckResult) -> None:
        self.results.append(result)


def checked_requests(
    monitor: RefCheckMonitor, sink: ResultSink, count: int = 1
) -> list[CheckRequest]:
    """The requests of the results `sink` holds once `monitor` is idle: exactly `count`."""
    assert monitor.flush(60)
    assert len(sink.results) == count, monitor.stats.snapshot()
    return [r.request for r in sink.results]


class RecordingExporter:
    """An exporter that keeps every result in the class's `exported`: for a monitor built from
    the environment (`REFCHECK_EXPORTERS=py:results:RecordingExporter`), given no hook."""

    name = "recording"
    exported: list[CheckResult] = []  # noqa: RUF012 (shared on purpose: the test reads it)

    def __init__(self, capture_content: bool = False) -> None:
        self.capture_content = capture_content

    def bind(self, queue_size: object) -> None:
        return None

    def export(self, results: object) -> None:
        RecordingExporter.exported.extend(results)  # type: ignore[call-overload]

    def record(self, tally: object, reason: str, count: int = 1) -> None:
        return None

    def force_flush(self, timeout: float) -> bool:
        return True

    def shutdown(self) -> None:
        return None
