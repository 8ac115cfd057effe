"""The share alerts (`alerting.share_rules`: rises and new-service levels) evaluated with numpy,
minute by minute.

Fast enough for thousands of simulated days, and exact: on counters sampled every minute from
0, Prometheus 2.x's `increase` over `[w] offset o` at minute t reads the samples t-o-w .. t-o
(both ends included) and extrapolates nothing (the range starts on a sample, or on the
counter's zero), so it is `c[t-o] - c[max(0, t-o-w)]` when that range holds two samples. Every
later step is the rule file's own float arithmetic in the same order, so the bounds are the
same floats and every comparison comes out the same: `promtool.check_replay` holds the two side
by side on the same series.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from refcheck_callbacks.alerting.share_rules import SHARES, Share, wilson_terms
from refcheck_callbacks.alerting.simulator.adjusted import Fits, lower_bound
from refcheck_callbacks.alerting.simulator.traffic import VERDICTS
from refcheck_callbacks.alerting.tunables import (
    AlertTunables,
    ShareLevel,
    ShareRise,
    duration_seconds,
)
from refcheck_callbacks.support.extras import require

if TYPE_CHECKING:
    import numpy as np

_COLUMNS = {"contradicted": [VERDICTS.index("contradiction")]}
_COLUMNS["unsupported"] = [VERDICTS.index("neutral"), VERDICTS.index("contradiction")]


def whole_minutes(duration: str) -> int:
    """A rule duration in minutes: the simulator scrapes and evaluates once a minute."""
    seconds = duration_seconds(duration)
    if seconds % 60:
        raise ValueError(f"the simulator evaluates once a minute: {duration} is not whole minutes")
    return int(seconds // 60)


def _increase(counts: np.ndarray, window: int, offset: int) -> np.ndarray:
    """`increase(...[window] offset offset)` at every minute, NaN where Prometheus has no
    value (fewer than two samples in range); counts has minutes on axis -2."""
    numpy: Any = require("numpy", "simulate")
    minutes = counts.shape[-2]
    end = numpy.arange(minutes) - offset
    start = numpy.maximum(end - window, 0)
    values = counts[..., numpy.maximum(end, 0), :] - counts[..., start, :]
    values = values.astype(numpy.float64)
    values[..., end < 1, :] = numpy.nan
    return values


def _wilson(part: np.ndarray, checked: np.ndarray, z: float, sign: float) -> np.ndarray:
    """The rules' Wilson bound of `part` of `checked` claims."""
    numpy: Any = require("numpy", "simulate")
    with numpy.errstate(divide="ignore", invalid="ignore"):
        return wilson_of(part / checked, checked, z, sign)


def wilson_of(ratio: np.ndarray, checked: np.ndarray, z: float, sign: float) -> np.ndarray:
    """The Wilson bound of a share `ratio` of `checked`, operation for operation as the rules
    write it (`share_rules.wilson_bound`)."""
    numpy: Any = require("numpy", "simulate")
    half_square, quarter_square, square = wilson_terms(z)
    with numpy.errstate(divide="ignore", invalid="ignore"):
        spread = z * numpy.sqrt(ratio * (1 - ratio) / checked + quarter_square / checked**2)
        centre = ratio + half_square / checked
        return (centre + sign * spread) / (1 + square / checked)


def _held(condition: np.ndarray, minutes: int) -> np.ndarray:
    """Firing: the condition held at this evaluation and the `minutes` before it."""
    numpy: Any = require("numpy", "simulate")
    held = numpy.cumsum(condition, axis=-1)
    before = numpy.zeros_like(held)
    before[..., minutes + 1 :] = held[..., : -(minutes + 1)]
    enough = numpy.arange(condition.shape[-1]) >= minutes
    return ((held - before) == minutes + 1) & enough


def replay(
    counts: np.ndarray, tunables: AlertTunables | None = None, fits: Fits | None = None
) -> dict[str, np.ndarray]:
    """Alert name -> firing at each minute, for cumulative `counts` of shape
    (..., minutes + 1, 3) in `VERDICTS` order (leading axes: independent series). With `fits`
    (`adjusted.fit_columns`), every claim is counted under a calibration with those flag
    counts: the new-service alerts read the adjusted rate's paging lower bound."""
    numpy: Any = require("numpy", "simulate")
    tunables = tunables or AlertTunables()
    test = tunables.share_test
    windows = {
        "fast": _increase(counts, whole_minutes(test.fast_window), 0),
        "slow": _increase(counts, whole_minutes(test.slow_window), 0),
    }
    baseline = _increase(
        counts, whole_minutes(test.baseline_window), whole_minutes(tunables.baseline_offset)
    )
    checked_baseline = baseline.sum(axis=-1)
    ready = checked_baseline >= test.min_baseline_claims
    checked = {name: window.sum(axis=-1) for name, window in windows.items()}
    min_claims = {"fast": test.fast_min_claims, "slow": test.slow_min_claims}
    firing = {}
    for share in SHARES:
        rise: ShareRise = getattr(tunables, share.key)
        level: ShareLevel = getattr(tunables, share.level_key)
        effects = {"fast": rise.fast_min_effect, "slow": rise.slow_min_effect}
        upper = _wilson(_part(baseline, share), checked_baseline, test.z, +1.0)
        upper[~ready] = numpy.nan
        rises = numpy.zeros(upper.shape, dtype=bool)
        above = numpy.zeros(upper.shape, dtype=bool)
        adjusted_above = numpy.zeros(upper.shape, dtype=bool)
        calibrated = numpy.zeros(upper.shape, dtype=bool)
        for name in ("fast", "slow"):
            lower = _wilson(_part(windows[name], share), checked[name], test.z, -1.0)
            enough = checked[name] >= min_claims[name]
            with numpy.errstate(invalid="ignore"):
                rises |= (lower - upper > effects[name]) & enough
                above |= (lower > level.level) & enough
                if fits is not None:
                    adjusted = lower_bound(
                        _part(windows[name], share), checked[name], fits[share.rate], test.z
                    )
                    adjusted_above |= (adjusted > level.adjusted_level) & enough
                    if name == "slow":
                        calibrated = ~numpy.isnan(adjusted)
        # A service with an estimate is judged on it, another on its raw share.
        above = (above & ~calibrated) | adjusted_above
        firing[share.alert] = _held(rises, whole_minutes(rise.pending_for))
        # BASELINE_READY is 0 wherever a window has claims and the baseline is short of them.
        firing[share.level_alert] = _held(above & ~ready, whole_minutes(level.pending_for))
    return firing


def _part(window: np.ndarray, share: Share) -> np.ndarray:
    return window[..., _COLUMNS[share.metric]].sum(axis=-1)


def baseline_ready(counts: np.ndarray, tunables: AlertTunables | None = None) -> np.ndarray:
    """The onboarding state at each minute: True once the baseline holds enough claims."""
    tunables = tunables or AlertTunables()
    test = tunables.share_test
    baseline = _increase(
        counts, whole_minutes(test.baseline_window), whole_minutes(tunables.baseline_offset)
    )
    ready: np.ndarray = baseline.sum(axis=-1) >= test.min_baseline_claims
    return ready


def onsets(firing: np.ndarray) -> np.ndarray:
    """Where an alert starts firing (a page): firing now and not at the evaluation before."""
    numpy: Any = require("numpy", "simulate")
    started = firing.copy()
    started[..., 1:] &= ~firing[..., :-1]
    result: np.ndarray = numpy.asarray(started)
    return result
