"""Where results and counts leave the monitor: exporters and `on_result` hooks, each isolated.

Nothing an exporter or hook raises, BaseException included, reaches the worker or another
exporter: it is logged and counted (`errors`). Every failed result is also counted in the
monitor's `stats` (`failed`, by its reason), so `stats` alone tells what went wrong.

Flushing and shutting down exporters run code we do not control that may ignore its own
timeout (an OpenTelemetry SDK retrying an endpoint that never answers): each such call runs on
a thread of its own, one at a time per exporter, and is waited for only until the caller's
deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Protocol, runtime_checkable

from refcheck_callbacks.check.calibration.file import Calibration
from refcheck_callbacks.contract.components import Exporter
from refcheck_callbacks.contract.feedback import Feedback, FeedbackExporter
from refcheck_callbacks.contract.reasons import ErrorReason, Reason, Tally, reason_label
from refcheck_callbacks.engine.counters import Counters
from refcheck_callbacks.support.deadline import Deadline, Overrun, SingleFlight
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import CheckResult, Outcome


def _flush(exporter: Exporter, deadline: Deadline) -> bool:
    """`force_flush` told the seconds left (an hour when there is no deadline)."""
    left = deadline.remaining()
    return exporter.force_flush(3600.0 if left is None else left)


ResultHook = Callable[[CheckResult], object]


@runtime_checkable
class CalibratedExporter(Protocol):
    """An exporter told which calibration the monitor's pipeline applies (optional: an
    exporter without this method is not told), so its metrics can name it and export its flag
    counts for prevalence estimates (`check.calibration.rates`). Called once by the monitor,
    after `bind`; None: the monitor is uncalibrated."""

    def calibrated(self, calibration: Calibration | None) -> None: ...


_FAILED = frozenset({Outcome.ERROR, Outcome.TIMEOUT, Outcome.INVALID_INPUT})


def failure_reason(result: CheckResult) -> str | None:
    """The `failed` reason a result is counted under; None when it is no failure."""
    if result.outcome in _FAILED:
        return result.error_type or result.outcome.value
    if result.outcome is Outcome.PARTIAL:
        return Outcome.PARTIAL.value
    return None


class Delivery:
    """The monitor's exporters, hooks and counters (the lists are the monitor's own: an app may
    add to them)."""

    def __init__(
        self,
        exporters: list[Exporter],
        hooks: list[ResultHook],
        stats: Counters,
        keepers: Sequence[Callable[[Sequence[CheckResult]], None]] = (),
    ) -> None:
        self.exporters = exporters
        self.hooks = hooks
        self.stats = stats
        self.keepers = tuple(keepers)
        """Given every batch of results first: the monitor's memory for feedback, the audit's
        draw."""
        self._flights: dict[int, tuple[Exporter, SingleFlight[Any]]] = {}

    def record(self, tally: Tally, reason: Reason | str, count: int = 1) -> None:
        """Count something not checked or failed, and tell the exporters (the reason as its
        plain value, the metric attribute). Never raises."""
        label = reason_label(reason)
        self.stats.add(tally, label, count)
        for exporter in list(self.exporters):
            try:
                exporter.record(tally, label, count)
            except BaseException:
                logger.exception("refcheck: exporter %s failed to record a count", exporter.name)

    def deliver(self, results: Sequence[CheckResult]) -> None:
        """Results to every exporter, then to every hook. Never raises."""
        for keep in self.keepers:
            try:
                keep(results)
            except Exception:  # a bug of ours: feedback on these answers will be refused
                logger.exception("refcheck: results were not kept for feedback or the audit")
        for result in results:
            reason = failure_reason(result)
            if reason is not None:
                self.stats.add(Tally.FAILED, reason)
        for exporter in list(self.exporters):
            self._guarded(
                exporter.name, ErrorReason.EXPORTER, len(results), exporter.export, results
            )
        for result in results:
            for hook in list(self.hooks):
                self._guarded("on_result", ErrorReason.ON_RESULT, 1, hook, result)

    def calibrated(self, calibration: Calibration | None) -> None:
        """The monitor's calibration to every exporter that takes one. Never raises."""
        for exporter in list(self.exporters):
            if isinstance(exporter, CalibratedExporter):
                self._guarded(
                    exporter.name, ErrorReason.EXPORTER, 0, exporter.calibrated, calibration
                )

    def feedback(self, feedback: Feedback) -> None:
        """A person's verdict to every exporter that takes one. Never raises."""
        for exporter in list(self.exporters):
            if isinstance(exporter, FeedbackExporter):
                self._guarded(exporter.name, ErrorReason.EXPORTER, 1, exporter.feedback, feedback)

    def _guarded(
        self,
        what: str,
        reason: ErrorReason,
        results: int,
        function: Callable[..., object],
        *args: Any,
    ) -> None:
        """Call an exporter or hook; if it raises, count the `results` it did not get."""
        try:
            function(*args)
        except BaseException:
            # Even SystemExit: in the worker's thread it would only end the worker.
            logger.exception("refcheck: %s raised; the result was not delivered there", what)
            self.record(Tally.ERRORS, reason, results)

    def flush(self, deadline: Deadline) -> bool:
        """Flush every exporter within the one deadline; False if one failed or overran."""
        flushed = True
        for exporter in list(self.exporters):
            done = self._bounded(exporter, "flush", deadline, partial(_flush, exporter, deadline))
            flushed = done is True and flushed
        return flushed

    def shutdown(self, deadline: Deadline) -> None:
        for exporter in list(self.exporters):
            self._bounded(exporter, "shut down", deadline, exporter.shutdown)

    def _bounded(
        self, exporter: Exporter, what: str, deadline: Deadline, call: Callable[[], object]
    ) -> object:
        """`call()` waited for until `deadline`; None when it overran or raised."""
        try:
            flight = self._flight(exporter).call(call, deadline)
        except Overrun:
            logger.warning(
                "refcheck: exporter %s did not %s within the deadline; it goes on in the "
                "background",
                exporter.name,
                what,
            )
            return None
        if flight.error is not None:
            error = flight.error
            logger.error("refcheck: exporter %s failed to %s: %r", exporter.name, what, error)
            return None
        return flight.result

    def _flight(self, exporter: Exporter) -> SingleFlight[Any]:
        entry = self._flights.get(id(exporter))
        if entry is None or entry[0] is not exporter:
            entry = (exporter, SingleFlight(f"refcheck-{exporter.name}"))
            self._flights[id(exporter)] = entry
        return entry[1]
