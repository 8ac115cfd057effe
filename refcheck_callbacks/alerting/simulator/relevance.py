"""The relevance alert on simulated traffic: false pages on clean traffic, time to detect a drop.

A service answers `answers_per_minute` (Poisson) questions a minute from `references_per_answer`
retrieved references each. References of one answer share their fate, which is what makes
the counts noisier than a binomial: each answer draws its share of references scored not
relevant from a Beta with the traffic's mean and intra-answer `correlation` (a beta-binomial:
at 0.5 many answers have all their references relevant or none). After the clean minutes a
share `missed` of the answers come from a broken retrieval (a stale index, a filter bug) whose
references are scored not relevant at `missed_not_relevant`.

`replay_relevance` evaluates `RefCheckRelevanceDrop` with numpy, the rule file's arithmetic in
the same order (as `replay` does for the share alerts), and `simulate_relevance` measures it
over many replayed services and holds one per cell against the real `promtool test rules`.
"""

from __future__ import annotations

import tempfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from refcheck_callbacks.alerting import relevance_rules
from refcheck_callbacks.alerting.rules import rules_yaml
from refcheck_callbacks.alerting.simulator.promtool import Series, observe
from refcheck_callbacks.alerting.simulator.replay import _held, _increase, whole_minutes, wilson_of
from refcheck_callbacks.alerting.simulator.report import SHIFTED_MINUTES, _detected, _pages
from refcheck_callbacks.alerting.tunables import AlertTunables
from refcheck_callbacks.exporters.names import PROMETHEUS, REFERENCE_RELEVANCE
from refcheck_callbacks.support.extras import require

if TYPE_CHECKING:
    import numpy as np

Share = float


class RelevanceRates(BaseModel):
    """How a service's references are scored: clean, and when its retrieval misses."""

    model_config = ConfigDict(frozen=True)

    name: str
    clean_not_relevant: Share = Field(gt=0.0, lt=1.0)
    """Of the references of a healthy retrieval, the share scored not relevant (at most 1/2)."""
    missed_not_relevant: Share = Field(gt=0.0, lt=1.0)
    """The same for the references of an answer whose retrieval missed."""
    correlation: Share = Field(0.5, gt=0.0, lt=1.0)
    """Intra-answer correlation of the not-relevant scores (the Beta's 1 / (a + b + 1))."""
    references_per_answer: int = Field(4, ge=1)

    def not_relevant_share(self, missed: float) -> float:
        return (1 - missed) * self.clean_not_relevant + missed * self.missed_not_relevant


SCENARIOS = (
    RelevanceRates(name="sharp", clean_not_relevant=0.3, missed_not_relevant=0.9, correlation=0.3),
    RelevanceRates(name="typical", clean_not_relevant=0.5, missed_not_relevant=0.8),
    RelevanceRates(name="flat", clean_not_relevant=0.55, missed_not_relevant=0.65),
)
"""A relevance model that separates a missed retrieval well, a typical one (half of four
retrieved passages scored not relevant, as for top-4 candidates of answer-selection sets where
one or two hold the answer), and one that barely does (a 20% miss moves the share by 0.02)."""


@dataclass(frozen=True)
class RelevanceTraffic:
    rates: RelevanceRates
    answers_per_minute: float
    clean_minutes: int
    shifted_minutes: int = 0
    missed: float = 0.2
    """After the clean minutes, this share of answers come from a retrieval that missed."""

    @property
    def minutes(self) -> int:
        return self.clean_minutes + self.shifted_minutes


def _beta(rng: Any, mean: float, correlation: float, size: int) -> np.ndarray:
    concentration = 1 / correlation - 1
    drawn: np.ndarray = rng.beta(mean * concentration, (1 - mean) * concentration, size)
    return drawn


def relevance_counters(traffic: RelevanceTraffic, seed: int) -> np.ndarray:
    """Cumulative (references not relevant, references scored) at minutes 0..minutes: shape
    (minutes + 1, 2), int64; one seed gives one series, services of a simulation differ."""
    numpy: Any = require("numpy", "simulate")
    rates = traffic.rates
    volume = round(traffic.answers_per_minute * 1000)
    rng = numpy.random.default_rng([seed, zlib.crc32(rates.name.encode()), volume, 45])
    answers = rng.poisson(traffic.answers_per_minute, traffic.minutes)
    minute = numpy.repeat(numpy.arange(traffic.minutes), answers)
    missed = rng.random(minute.size) < numpy.where(
        minute >= traffic.clean_minutes, traffic.missed, 0.0
    )
    share = numpy.where(
        missed,
        _beta(rng, rates.missed_not_relevant, rates.correlation, minute.size),
        _beta(rng, rates.clean_not_relevant, rates.correlation, minute.size),
    )
    not_relevant = rng.binomial(rates.references_per_answer, share)
    per_minute = numpy.stack(
        [
            numpy.bincount(minute, weights=not_relevant, minlength=traffic.minutes),
            answers * rates.references_per_answer,
        ],
        axis=-1,
    ).astype(numpy.int64)
    start = numpy.zeros((1, 2), dtype=numpy.int64)
    return numpy.concatenate([start, numpy.cumsum(per_minute, axis=0)])


def replay_relevance(
    counts: np.ndarray, tunables: AlertTunables | None = None
) -> dict[str, np.ndarray]:
    """`RefCheckRelevanceDrop` firing at each minute, for cumulative `counts` of shape
    (..., minutes + 1, 2) (leading axes: independent series)."""
    numpy: Any = require("numpy", "simulate")
    tunables = tunables or AlertTunables()
    test, drop = tunables.share_test, tunables.relevance_drop
    offset = whole_minutes(tunables.baseline_offset)
    baseline = _increase(counts, whole_minutes(test.baseline_window), offset)
    upper = _bound(baseline, drop.design_effect, test.z, +1.0)
    upper[~(baseline[..., 1] >= drop.min_baseline_references)] = numpy.nan
    dropped = numpy.zeros(upper.shape, dtype=bool)
    for window, effect, minimum in (
        (test.fast_window, drop.fast_min_effect, drop.fast_min_references),
        (test.slow_window, drop.slow_min_effect, drop.slow_min_references),
    ):
        recent = _increase(counts, whole_minutes(window), 0)
        lower = _bound(recent, drop.design_effect, test.z, -1.0)
        with numpy.errstate(invalid="ignore"):
            dropped |= (lower - upper > effect) & (recent[..., 1] >= minimum)
    return {relevance_rules.ALERT: _held(dropped, whole_minutes(drop.pending_for))}


def _bound(window: np.ndarray, design_effect: float, z: float, sign: float) -> np.ndarray:
    """The rules' bound: the not-relevant share of a window's references, on their effective
    count (`references / design_effect`)."""
    numpy: Any = require("numpy", "simulate")
    with numpy.errstate(divide="ignore", invalid="ignore"):
        ratio = window[..., 0] / window[..., 1]
        return wilson_of(ratio, window[..., 1] / design_effect, z, sign)


def relevance_input_series(job: str, counts: np.ndarray) -> list[dict[str, str]]:
    """The histogram's `le="0.5"` bucket and count, as the exporter renders them."""
    histogram = PROMETHEUS[REFERENCE_RELEVANCE]
    columns = {
        f'{histogram}_bucket{{job="{job}",le="0.5"}}': counts[:, 0],
        f'{histogram}_count{{job="{job}"}}': counts[:, 1],
    }
    return [
        {"series": name, "values": " ".join(str(int(value)) for value in values)}
        for name, values in columns.items()
    ]


class RelevanceFigures(BaseModel):
    rates: str
    answers_per_minute: float
    references_per_minute: float
    not_relevant_share: tuple[float, float]
    """Clean, then with `missed` of the answers from a retrieval that missed."""
    replay_seeds: int
    replay_days: int
    replay_pages_per_30_days: float
    replay_seeds_with_pages: int
    replay_detected_median: float | None
    """Minutes from the drop to the alert; None when fewer than half the services fired."""
    replay_detected_p90: float | None
    promtool_days: float = 0.0
    promtool_pages: int | None = None
    promtool_detected_after: int | None = None


@dataclass(frozen=True)
class RelevanceSettings:
    volumes: Sequence[float] = (1.0, 5.0, 25.0)
    """Answers a minute."""
    missed: float = 0.2
    days: int = 30
    seeds: int = 20
    promtool_days: float = 1.0
    """Clean days of the one service per cell promtool evaluates (0: none)."""
    workers: int = 2


def simulate_relevance(
    scenarios: Sequence[RelevanceRates] = SCENARIOS,
    settings: RelevanceSettings | None = None,
    tunables: AlertTunables | None = None,
) -> list[RelevanceFigures]:
    """Figures for every (rates, volume): replayed over `seeds` services of `days` clean days
    then the drop, and one service per cell through promtool, which must agree exactly."""
    settings = settings or RelevanceSettings()
    tunables = tunables or AlertTunables()
    cells = [(rates, float(volume)) for rates in scenarios for volume in settings.volumes]
    figures = [_replayed(rates, volume, settings, tunables) for rates, volume in cells]
    if settings.promtool_days > 0:
        _promtooled(figures, cells, settings, tunables)
    return figures


def _replayed(
    rates: RelevanceRates, volume: float, settings: RelevanceSettings, tunables: AlertTunables
) -> RelevanceFigures:
    numpy: Any = require("numpy", "simulate")
    traffic = RelevanceTraffic(
        rates, volume, settings.days * 1440, SHIFTED_MINUTES, settings.missed
    )
    pages, detected = [], []
    for seed in range(settings.seeds):
        firing = replay_relevance(relevance_counters(traffic, seed), tunables)
        pages.append(int(_pages(firing, traffic.clean_minutes)))
        detected.append(float(_detected(firing, traffic.clean_minutes)))
    median, p90 = numpy.percentile(numpy.array(detected), [50, 90], method="inverted_cdf")
    return RelevanceFigures(
        rates=rates.name,
        answers_per_minute=volume,
        references_per_minute=volume * rates.references_per_answer,
        not_relevant_share=(
            rates.not_relevant_share(0.0),
            rates.not_relevant_share(traffic.missed),
        ),
        replay_seeds=settings.seeds,
        replay_days=settings.days,
        replay_pages_per_30_days=float(numpy.mean(pages)) * 30 / settings.days,
        replay_seeds_with_pages=int(numpy.count_nonzero(pages)),
        replay_detected_median=float(median) if numpy.isfinite(median) else None,
        replay_detected_p90=float(p90) if numpy.isfinite(p90) else None,
    )


def _promtooled(
    figures: Sequence[RelevanceFigures],
    cells: Sequence[tuple[RelevanceRates, float]],
    settings: RelevanceSettings,
    tunables: AlertTunables,
) -> None:
    clean = round(settings.promtool_days * 1440)
    named = []
    for rates, volume in cells:
        traffic = RelevanceTraffic(rates, volume, clean, SHIFTED_MINUTES, settings.missed)
        counts = relevance_counters(traffic, 0)
        job = f"{rates.name}_{volume:g}".replace(".", "_")
        named.append((job, Series(job, counts, clean, replay_relevance(counts, tunables))))
    with tempfile.TemporaryDirectory(prefix="refcheck-relevance-") as folder:
        rules = Path(folder) / "rules.yml"
        rules.write_text(rules_yaml(tunables), encoding="utf-8")
        seen = observe(
            rules,
            named,
            [relevance_rules.ALERT],
            settings.workers,
            inputs=relevance_input_series,
        )  # raises where promtool and the replay disagree
    for cell, found in zip(figures, seen, strict=True):
        cell.promtool_days = settings.promtool_days
        cell.promtool_pages = sum(found.pages.values())
        cell.promtool_detected_after = found.detected_after


def relevance_markdown(figures: Sequence[RelevanceFigures]) -> str:
    if not figures:
        return ""
    first = figures[0]
    header = (
        "| relevance rates | answers/min | references/min | not-relevant share: clean → drop "
        f"| false pages / 30 d, replay ({first.replay_seeds} × {first.replay_days} d) "
        f"| false pages in promtool's {first.promtool_days:g} d "
        "| detection: replay median / p90 | detection: promtool |\n"
        "|---|---:|---:|---|---:|---:|---:|---:|\n"
    )
    rows = []
    for cell in figures:
        clean, dropped = cell.not_relevant_share
        rows.append(
            f"| {cell.rates} | {cell.answers_per_minute:g} | {cell.references_per_minute:g} "
            f"| {clean:.3f} → {dropped:.3f} (+{dropped - clean:.3f}) "
            f"| {cell.replay_pages_per_30_days:.2f} ({cell.replay_seeds_with_pages} of "
            f"{cell.replay_seeds} with any) "
            f"| {'–' if cell.promtool_pages is None else cell.promtool_pages} "
            f"| {_minutes(cell.replay_detected_median)} / {_minutes(cell.replay_detected_p90)} "
            f"| {'–' if cell.promtool_pages is None else _minutes(cell.promtool_detected_after)} |"
        )
    return header + "\n".join(rows) + "\n"


def _minutes(value: float | None) -> str:
    return f"> {SHIFTED_MINUTES} min" if value is None else f"{value:g} min"
