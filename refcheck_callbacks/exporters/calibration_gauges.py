"""The loaded calibration's flag counts as gauges, so recording rules can adjust any window.

A prevalence estimate adjusts a window's flag share by the checker's flag rates on audit labels
(`check.calibration.estimate`). Those rates are four counts per rate (`RateFit`), fixed for the
life of a calibration; exporting them beside the claim counters lets Prometheus compute the
adjusted rate and its interval over any window and any set of replicas, instead of each
process estimating from its own traffic alone.

Observable gauges, one value per (rate, calibration id), read at every collection from the
monitors that told their exporter which calibration they apply. An uncalibrated monitor (or a
calibration without a rate's fit) reports only `refcheck.calibration.labels` = 0, so the
dashboard can say "uncalibrated" and how many labels are missing. Replicas of one service that
load the same calibration report the same values: rules take their max, never their sum.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable

from opentelemetry.metrics import CallbackOptions, Meter, Observation
from opentelemetry.util.types import Attributes

from refcheck_callbacks.check.calibration.file import Calibration
from refcheck_callbacks.check.calibration.rates import RateFit, RateName
from refcheck_callbacks.exporters import names

_COUNTS: dict[str, tuple[str, Callable[[RateFit], int]]] = {
    names.CALIBRATION_POSITIVES: (
        "Audit-labelled claims of the rate's kind, in the loaded calibration.",
        lambda fit: fit.positives,
    ),
    names.CALIBRATION_NEGATIVES: (
        "Audit-labelled claims not of the rate's kind, in the loaded calibration.",
        lambda fit: fit.negatives,
    ),
    names.CALIBRATION_FLAGGED_POSITIVES: (
        "Of the calibration's positives, those the checker flagged.",
        lambda fit: fit.flagged_positives,
    ),
    names.CALIBRATION_FLAGGED_NEGATIVES: (
        "Of the calibration's negatives, those the checker flagged.",
        lambda fit: fit.flagged_negatives,
    ),
}


class CalibrationGauges:
    """The five calibration gauges of one meter, fed by every watching exporter."""

    def __init__(self, meter: Meter) -> None:
        self._lock = threading.Lock()
        self._sources: list[tuple[weakref.ref[object], Calibration | None]] = []
        for name, (description, count) in _COUNTS.items():
            meter.create_observable_gauge(
                name,
                callbacks=[self._observer(count)],
                unit=names.UNIT_CLAIM,
                description=description,
            )
        meter.create_observable_gauge(
            names.CALIBRATION_LABELS,
            callbacks=[self._observe_labels],
            unit=names.UNIT_CLAIM,
            description="Audit labels the loaded calibration's fit used, per rate (0: "
            "uncalibrated).",
        )

    def watch(self, source: object, calibration: Calibration | None) -> None:
        """Report `calibration` (None: uncalibrated) while `source` lives (held weakly)."""
        with self._lock:
            self._sources = [(r, c) for r, c in self._sources if r() not in (None, source)]
            self._sources.append((weakref.ref(source), calibration))

    def unwatch(self, source: object) -> None:
        with self._lock:
            self._sources = [(r, c) for r, c in self._sources if r() not in (None, source)]

    def _calibrations(self) -> list[Calibration | None]:
        with self._lock:
            return [calibration for ref, calibration in self._sources if ref() is not None]

    def _observer(
        self, count: Callable[[RateFit], int]
    ) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            values: dict[tuple[str, str], int] = {}
            for calibration in self._calibrations():
                if calibration is not None:
                    for rate, fit in calibration.rates.items():
                        values[(rate.value, calibration.id)] = count(fit)
            return [Observation(value, _attributes(*key)) for key, value in values.items()]

        return observe

    def _observe_labels(self, options: CallbackOptions) -> Iterable[Observation]:
        """Labels per rate and calibration; a rate no calibration fits reads 0, under the
        calibration's id where there is one. The same attributes from two monitors: the max."""
        values: dict[tuple[str, str | None], int] = {}
        for calibration in self._calibrations():
            identity = None if calibration is None else calibration.id
            for rate in RateName:
                fit = None if calibration is None else calibration.rates.get(rate)
                key = (rate.value, identity)
                values[key] = max(values.get(key, 0), 0 if fit is None else fit.labels)
        return [Observation(value, _attributes(*key)) for key, value in values.items()]


def _attributes(rate: str, calibration_id: str | None) -> Attributes:
    if calibration_id is None:
        return {names.RATE: rate}
    return {names.RATE: rate, names.CALIBRATION_ID: calibration_id}
