"""Figures per (checker rates, volume): false pages per 30 days of clean traffic, and the time
from a shift to unsupported claims until a share alert fires.

Two measurements of the same rules, side by side:
- promtool: one service per cell (seed 0), `promtool_days` of clean traffic then the shift,
  through the real `promtool test rules`; with the rules this version writes, the replay's
  prediction for that very series is the test's expectation, so the run also proves the two
  agree;
- replay: `seeds` services per cell, each `days` of clean traffic then the shift, evaluated by
  `replay` (the same arithmetic, thousands of days a minute): the expected false pages per 30
  days, and the detection time's median, 90th percentile and share within the target.

A rule file this version did not write (`rules=`, an older one) is measured by promtool alone.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from refcheck_callbacks.alerting.rules import rules_yaml
from refcheck_callbacks.alerting.share_rules import SHARE_ALERTS
from refcheck_callbacks.alerting.simulator.adjusted import audit, fit_columns
from refcheck_callbacks.alerting.simulator.promtool import Observed, Series, observe
from refcheck_callbacks.alerting.simulator.replay import onsets, replay
from refcheck_callbacks.alerting.simulator.traffic import LabelRates, Traffic, counters
from refcheck_callbacks.alerting.tunables import AlertTunables
from refcheck_callbacks.check.calibration.rates import RateFit, RateName
from refcheck_callbacks.support.extras import require

if TYPE_CHECKING:
    import numpy as np

SHIFTED_MINUTES = 180
"""Simulated minutes after the shift: the longest target and an hour more."""
TARGETS = ((20.0, 0.05, 60), (0.0, 0.10, 120))
"""Issue 30's detection targets, by volume: (claims a minute at least, hallucination-share
rise at least, minutes to fire at most): 60 minutes from 20 claims a minute where the share
rises by 0.05, 2 hours below that where it rises by 0.10."""
OPERATIONAL_ALERTS = (
    "RefCheckCheckerErrors",
    "RefCheckDroppingEvaluations",
    "RefCheckStalledChecker",
    "RefCheckJudgeBudgetNearlySpent",
)
"""Alerts on the checker's health, not on the shares: left out of the pages counted."""
_BATCH = 5


@dataclass(frozen=True)
class Settings:
    volumes: Sequence[float] = (5.0, 20.0, 100.0)
    """Claims a minute."""
    unsupported: float = 0.2
    """The shift: this share of claims becomes unsupported."""
    days: int = 30
    """Clean days per replayed service."""
    seeds: int = 20
    """Replayed services per cell."""
    promtool_days: float = 2.0
    """Clean days of the promtool service per cell (0: no promtool run)."""
    workers: int = 2
    """promtool processes run side by side."""
    audit_labels: int = 0
    """Each service is calibrated on this many random audit labels (its own draw); 0: none."""
    audit_unsupported: float = 0.3
    """The unsupported share of the audited traffic."""

    def fits(self, rates: LabelRates, seeds: range) -> list[dict[RateName, RateFit]] | None:
        """The calibration of each seed's service; None when uncalibrated."""
        if not self.audit_labels:
            return None
        return [audit(rates, self.audit_labels, self.audit_unsupported, s) for s in seeds]


class Figures(BaseModel):
    rates: str
    claims_per_minute: float
    hallucination_share: tuple[float, float]
    """Clean, then shifted: the neutral + contradiction share the checker's rates give."""
    contradiction_share: tuple[float, float]
    target_minutes: int | None
    """Issue 30's target for this cell; None where the checker does not separate the shift."""
    promtool_days: float
    promtool_pages: dict[str, int] | None = None
    promtool_firing_share: float | None = None
    """Of promtool's clean minutes, the share with a share alert firing."""
    promtool_detected_after: int | None = None
    promtool_firing_at_shift: bool | None = None
    replay_seeds: int = 0
    replay_days: int = 0
    replay_pages_per_30_days: float | None = None
    replay_seeds_with_pages: int | None = None
    replay_detected_median: float | None = None
    """Minutes; None when fewer than half the services fired within the simulated span."""
    replay_detected_p90: float | None = None
    replay_within_target: float | None = None


def detection_target(claims_per_minute: float, rise: float) -> int | None:
    for min_volume, min_rise, minutes in TARGETS:
        if claims_per_minute >= min_volume:
            return minutes if rise >= min_rise - 1e-9 else None
    return None


def share_alerts(rules_text: str) -> list[str]:
    """The alerts of a rule file that are not about the checker's health."""
    names = re.findall(r"^\s*-?\s*alert:\s*(\S+)", rules_text, flags=re.MULTILINE)
    return [name for name in names if name not in OPERATIONAL_ALERTS]


def simulate(
    rates: Sequence[LabelRates],
    settings: Settings | None = None,
    tunables: AlertTunables | None = None,
    rules: Path | None = None,
) -> list[Figures]:
    """Figures for every (rates, volume): of the rules `tunables` write, or of the rule file
    `rules` (then promtool alone measures them)."""
    settings = settings or Settings()
    modelled = rules is None
    tunables = tunables or AlertTunables()
    cells = [(r, float(v)) for r in rates for v in settings.volumes]
    figures = [_figures(r, v, settings) for r, v in cells]
    if modelled:
        for cell, (r, volume) in zip(figures, cells, strict=True):
            _replayed(
                cell, Traffic(r, volume, settings.days * 1440, SHIFTED_MINUTES), settings, tunables
            )
    if settings.promtool_days > 0:
        with tempfile.TemporaryDirectory(prefix="refcheck-alert-rules-") as folder:
            if rules is None:
                rules = Path(folder) / "rules.yml"
                rules.write_text(rules_yaml(tunables), encoding="utf-8")
            _promtooled(figures, cells, settings, rules, tunables if modelled else None)
    return figures


def _figures(rates: LabelRates, volume: float, settings: Settings) -> Figures:
    hallucination = (
        rates.hallucination_share(0.0),
        rates.hallucination_share(settings.unsupported),
    )
    return Figures(
        rates=rates.name,
        claims_per_minute=volume,
        hallucination_share=hallucination,
        contradiction_share=(
            rates.contradiction_share(0.0),
            rates.contradiction_share(settings.unsupported),
        ),
        target_minutes=detection_target(volume, hallucination[1] - hallucination[0]),
        promtool_days=settings.promtool_days,
    )


def _replayed(cell: Figures, traffic: Traffic, settings: Settings, tunables: AlertTunables) -> None:
    numpy: Any = require("numpy", "simulate")
    pages, detected = [], []
    for first in range(0, settings.seeds, _BATCH):
        batch = range(first, min(first + _BATCH, settings.seeds))
        counts = numpy.stack([counters(traffic, seed) for seed in batch])
        fits = settings.fits(traffic.rates, batch)
        firing = replay(counts, tunables, None if fits is None else fit_columns(fits))
        pages += list(_pages(firing, traffic.clean_minutes))
        detected += list(_detected(firing, traffic.clean_minutes))
    times = numpy.array(detected, dtype=float)
    cell.replay_seeds, cell.replay_days = settings.seeds, settings.days
    cell.replay_pages_per_30_days = float(numpy.mean(pages)) * 30 / settings.days
    cell.replay_seeds_with_pages = int(numpy.count_nonzero(pages))
    median, p90 = numpy.percentile(times, [50, 90], method="inverted_cdf")
    cell.replay_detected_median = float(median) if numpy.isfinite(median) else None
    cell.replay_detected_p90 = float(p90) if numpy.isfinite(p90) else None
    if cell.target_minutes is not None:
        cell.replay_within_target = float(numpy.mean(times <= cell.target_minutes))


def _pages(firing: dict[str, np.ndarray], clean_minutes: int) -> np.ndarray:
    started = [onsets(f)[..., : clean_minutes + 1].sum(axis=-1) for f in firing.values()]
    total: np.ndarray = sum(started[1:], started[0])
    return total


def _detected(firing: dict[str, np.ndarray], clean_minutes: int) -> np.ndarray:
    """Minutes from the shift to the first firing minute after it (inf: none)."""
    numpy: Any = require("numpy", "simulate")
    after = numpy.logical_or.reduce([f[..., clean_minutes + 1 :] for f in firing.values()])
    minutes = after.argmax(axis=-1) + 1.0
    result: np.ndarray = numpy.where(after.any(axis=-1), minutes, numpy.inf)
    return result


def _promtooled(
    figures: Sequence[Figures],
    cells: Sequence[tuple[LabelRates, float]],
    settings: Settings,
    rules: Path,
    tunables: AlertTunables | None,
) -> None:
    clean = round(settings.promtool_days * 1440)
    named = []
    for index, (r, volume) in enumerate(cells):
        counts = counters(Traffic(r, volume, clean, SHIFTED_MINUTES), 0)
        fits = settings.fits(r, range(1))
        columns = None if fits is None else {k: v[0] for k, v in fit_columns(fits).items()}
        predicted = None if tunables is None else replay(counts, tunables, columns)
        job = re.sub(r"[^a-zA-Z0-9_]", "_", f"{r.name}_{volume:g}")
        named.append(
            (
                f"{index}: {r.name} at {volume:g} claims/min",
                Series(job, counts, clean, predicted, None if fits is None else fits[0]),
            )
        )
    alerts = list(SHARE_ALERTS) if tunables is not None else share_alerts(rules.read_text())
    seen: list[Observed] = observe(rules, named, alerts, settings.workers)
    for cell, found in zip(figures, seen, strict=True):
        cell.promtool_pages = found.pages
        cell.promtool_firing_share = max(found.firing_minutes.values(), default=0) / (clean + 1)
        cell.promtool_detected_after = found.detected_after
        cell.promtool_firing_at_shift = found.firing_at_shift


def markdown(figures: Sequence[Figures]) -> str:
    """The figures as a table: one row per (rates, volume)."""
    if not figures:
        return ""
    first = figures[0]
    header = (
        "| set | claims/min | hallucination share: clean → shifted | contradiction share "
        "| target | false pages in promtool's "
        f"{first.promtool_days:g} d | false pages / 30 d, replay ({first.replay_seeds} × "
        f"{first.replay_days} d) "
        "| detection: promtool | replay median / p90 | replay within target |\n"
        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|\n"
    )
    return header + "\n".join(_row(cell) for cell in figures) + "\n"


def _row(cell: Figures) -> str:
    clean, shifted = cell.hallucination_share
    c_clean, c_shifted = cell.contradiction_share
    cells = [
        cell.rates,
        f"{cell.claims_per_minute:g}",
        f"{clean:.3f} → {shifted:.3f} (+{shifted - clean:.3f})",
        f"{c_clean:.3f} → {c_shifted:.3f}",
        "–" if cell.target_minutes is None else f"{cell.target_minutes} min",
        _promtool_pages(cell),
        "–"
        if cell.replay_pages_per_30_days is None
        else f"{cell.replay_pages_per_30_days:.2f} ({cell.replay_seeds_with_pages} of "
        f"{cell.replay_seeds} with any)",
        _promtool_detection(cell),
        f"{_minutes(cell.replay_detected_median)} / {_minutes(cell.replay_detected_p90)}"
        if cell.replay_seeds
        else "–",
        "–" if cell.replay_within_target is None else f"{cell.replay_within_target:.0%}",
    ]
    return "| " + " | ".join(cells) + " |"


def _promtool_pages(cell: Figures) -> str:
    if cell.promtool_pages is None:
        return "–"
    total = sum(cell.promtool_pages.values())
    parts = [f"{alert} {count}" for alert, count in cell.promtool_pages.items() if count]
    if cell.promtool_firing_share:
        parts.append(f"firing {cell.promtool_firing_share:.0%} of the time")
    return f"{total}" + (f" ({', '.join(parts)})" if parts else "")


def _promtool_detection(cell: Figures) -> str:
    if cell.promtool_pages is None:
        return "–"
    if cell.promtool_firing_at_shift:
        return "already firing"
    return _minutes(cell.promtool_detected_after)


def _minutes(value: float | None) -> str:
    return f"> {SHIFTED_MINUTES} min" if value is None else f"{value:g} min"
