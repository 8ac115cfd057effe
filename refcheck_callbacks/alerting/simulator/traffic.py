"""A checker's label rates, and the claim counters a service would export with them.

The rates are what `refcheck bench` measures (`binary.predicted_labels` in bench.json): of the
claims the labelled set says are supported, the share the checker labels entailment, neutral
and contradiction; the same for the unsupported ones. A service whose answers are all supported
shows the first mix; one where a fifth of the claims are unsupported shows 80% of the first and
20% of the second.

Traffic is drawn per minute: claims ~ Poisson(volume), unsupported ones ~ Binomial, each group's
labels ~ Multinomial, one claim per answer as in the issue (real answers carry several claims
that tend to share a fate, which adds noise the binomial does not have: raise `share_test.z` or
the minimum effects if a service's dashboard swings more than the simulation). The counters
are cumulative, sampled once a minute from 0, as Prometheus would scrape them.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from refcheck_callbacks.support.extras import require

if TYPE_CHECKING:
    import numpy as np

VERDICTS = ("entailment", "neutral", "contradiction")
"""The order of the label columns everywhere in the simulator."""
_UNSUPPORTED = (1, 2)
_CONTRADICTED = (2,)

Mix = tuple[float, float, float]


class LabelRates(BaseModel):
    """One checker on one kind of traffic: its label mix on supported and unsupported claims."""

    model_config = ConfigDict(frozen=True)

    name: str
    supported: Mix = Field(description="entailment, neutral, contradiction shares (sum to 1)")
    unsupported: Mix

    @model_validator(mode="after")
    def _mixes_are_shares(self) -> LabelRates:
        for mix in (self.supported, self.unsupported):
            if min(mix) < 0 or abs(sum(mix) - 1.0) > 1e-6:
                raise ValueError(f"{self.name}: a label mix must be shares that sum to 1: {mix}")
        return self

    def hallucination_share(self, unsupported: float) -> float:
        """The neutral + contradiction share of claims when `unsupported` of them are."""
        return _share(self, unsupported, _UNSUPPORTED)

    def contradiction_share(self, unsupported: float) -> float:
        return _share(self, unsupported, _CONTRADICTED)


def _share(rates: LabelRates, unsupported: float, columns: tuple[int, ...]) -> float:
    return sum(
        (1 - unsupported) * rates.supported[c] + unsupported * rates.unsupported[c] for c in columns
    )


def rates_from_bench(path: Path) -> list[LabelRates]:
    """Every (set, checker) of a bench.json, named `set` (or `set/checker` with several)."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        datasets = report["datasets"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a bench.json from `refcheck bench`: {exc}") from exc
    found = []
    for dataset in datasets:
        checkers = dataset.get("checkers", [])
        for scores in checkers:
            name = dataset["dataset"]
            if len(checkers) > 1:
                name = f"{name}/{scores['checker']}"
            found.append(_rates(name, (scores.get("binary") or {}).get("predicted_labels"), path))
    if not found:
        raise ValueError(f"{path}: holds no checked dataset")
    return found


def _rates(name: str, counts: Any, path: Path) -> LabelRates:
    if not counts or not all(sum(counts.get(g, {}).values()) for g in ("supported", "unsupported")):
        raise ValueError(
            f"{path}: {name} has no label counts for both supported and unsupported claims "
            "(binary.predicted_labels): run `refcheck bench` again with this version"
        )

    def mix(gold: str) -> Mix:
        total = sum(counts[gold].values())
        shares = [counts[gold].get(verdict, 0) / total for verdict in VERDICTS]
        return shares[0], shares[1], shares[2]

    return LabelRates(name=name, supported=mix("supported"), unsupported=mix("unsupported"))


@dataclass(frozen=True)
class Traffic:
    """`clean_minutes` of fully supported answers, then `shifted_minutes` with a share
    `unsupported` of unsupported claims, at `claims_per_minute` on average."""

    rates: LabelRates
    claims_per_minute: float
    clean_minutes: int
    shifted_minutes: int = 0
    unsupported: float = 0.2

    @property
    def minutes(self) -> int:
        return self.clean_minutes + self.shifted_minutes


def counters(traffic: Traffic, seed: int) -> np.ndarray:
    """Cumulative claims per verdict at minutes 0..minutes: shape (minutes + 1, 3), int64.

    One seed gives one series, the same whichever other series are drawn (promtool and the
    replay see identical counts for a seed); the rates' name and the volume are mixed in, so
    services of one simulation are independent."""
    numpy: Any = require("numpy", "simulate")
    volume = round(traffic.claims_per_minute * 1000)
    rng = numpy.random.default_rng([seed, zlib.crc32(traffic.rates.name.encode()), volume])
    minute = numpy.arange(traffic.minutes)
    claims = rng.poisson(traffic.claims_per_minute, traffic.minutes)
    share = numpy.where(minute >= traffic.clean_minutes, traffic.unsupported, 0.0)
    unsupported = rng.binomial(claims, share)
    labels = rng.multinomial(claims - unsupported, traffic.rates.supported) + rng.multinomial(
        unsupported, traffic.rates.unsupported
    )
    start = numpy.zeros((1, len(VERDICTS)), dtype=numpy.int64)
    return numpy.concatenate([start, numpy.cumsum(labels, axis=0)])
