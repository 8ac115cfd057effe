"""Fitting a calibration's decision points on labelled claims (`refcheck calibrate`).

The checker labels every claim once, through the same pipeline as in production, at its own
decision points; fitting then only re-cuts those verdicts (`check.calibration.points`), so the
search is cheap. The support threshold is chosen for balanced accuracy (within one standard
error of the best, nearest the checker's own: `fit_points`); the conflict points for the
false-contradiction rate (gold-supported claims labelled Contradiction, the contradiction rate
of clean traffic): within the target, keeping the most Contradictions on unsupported claims
(the signal an alert reads). Where nothing meets the target, the lowest rate wins.

Figures are cross-validated by response: the claims of one answer are never split between
fitting and measuring, as an app's answers would not be.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

from refcheck_callbacks import __version__
from refcheck_callbacks.bench import metrics
from refcheck_callbacks.bench.datasets import LabelledExample
from refcheck_callbacks.bench.runner import gold_supported
from refcheck_callbacks.check.calibration.file import (
    Calibration,
    CheckerIdentity,
    CrossValidated,
    DataSize,
    Figures,
    LabelCounts,
)
from refcheck_callbacks.check.calibration.points import (
    DecisionPoints,
    contradiction_probability,
    relabel,
)
from refcheck_callbacks.check.conflict.base import support
from refcheck_callbacks.types import ConflictKind, Label, Verdict

DEFAULT_MAX_FALSE_CONTRADICTION = 0.01
"""At most 1% of supported claims labelled Contradiction: the contradiction rate an alert
sees on clean traffic stays near zero."""
THRESHOLDS = 200
"""Support thresholds tried: quantiles of the scores, and the checker's own."""
CONTRADICTION_BARS = 10
"""Minimum P(contradiction) values tried: 0 and quantiles of the Contradictions' scores."""
_KINDS = tuple(ConflictKind)


@dataclass(frozen=True)
class Scored:
    """One labelled claim and the checker's verdict on it."""

    group: str
    """Its example's group (the response, or the source text several share): folds and
    halves never split one."""
    supported: bool
    verdict: Verdict


def scored(examples: Sequence[LabelledExample], verdicts: Sequence[Verdict | None]) -> list[Scored]:
    """The claims with a binary gold label and a verdict (a failed claim is left out)."""
    out = []
    for example, verdict in zip(examples, verdicts, strict=True):
        gold = gold_supported(example)
        if gold is not None and verdict is not None and verdict.label is not None:
            out.append(Scored(example.group, gold, verdict))
    return out


def _counts(labels: Sequence[Label | None]) -> LabelCounts:
    return LabelCounts(
        entailment=labels.count(Label.ENTAILMENT),
        neutral=labels.count(Label.NEUTRAL),
        contradiction=labels.count(Label.CONTRADICTION),
    )


def figures(rows: Sequence[Scored], verdicts: Sequence[Verdict]) -> Figures:
    """`verdicts` (one per row) measured against the rows' gold."""
    gold = [row.supported for row in rows]
    on_supported = [v.label for v, g in zip(verdicts, gold, strict=True) if g]
    on_unsupported = [v.label for v, g in zip(verdicts, gold, strict=True) if not g]
    return Figures(
        claims=len(rows),
        balanced_accuracy=metrics.balanced_accuracy(
            gold, [v.label is Label.ENTAILMENT for v in verdicts]
        ),
        false_contradiction_rate=on_supported.count(Label.CONTRADICTION) / len(on_supported)
        if on_supported
        else None,
        auroc=metrics.auroc(gold, [support(v) for v in verdicts]),
        supported=_counts(on_supported),
        unsupported=_counts(on_unsupported),
    )


@dataclass(frozen=True)
class _Arrays:
    """The verdicts as the search reads them."""

    entailment: np.ndarray
    contradiction: np.ndarray
    is_contradiction: np.ndarray
    vetoed: np.ndarray
    """Neutral although P(entailment) passed the checker's own threshold (`relabel`)."""
    kind: np.ndarray
    """Index into `_KINDS`; -1 for a Contradiction without a kind, or none."""
    gold: np.ndarray

    @classmethod
    def of(cls, rows: Sequence[Scored], own_threshold: float) -> _Arrays:
        verdicts = [row.verdict for row in rows]
        entailment = np.array([support(v) for v in verdicts], dtype=np.float64)
        neutral = np.array([v.label is Label.NEUTRAL for v in verdicts])
        return cls(
            entailment,
            np.array([contradiction_probability(v) for v in verdicts], dtype=np.float64),
            np.array([v.label is Label.CONTRADICTION for v in verdicts]),
            neutral & (entailment >= own_threshold),
            np.array([-1 if v.conflict is None else _KINDS.index(v.conflict) for v in verdicts]),
            np.array([row.supported for row in rows]),
        )


def _candidates(values: np.ndarray, count: int, extra: Sequence[float] = ()) -> np.ndarray:
    if len(values) == 0:
        return np.unique(np.asarray(extra, dtype=np.float64))
    quantiles = np.quantile(values, np.linspace(0.0, 1.0, count))
    return np.unique(np.concatenate([quantiles, np.asarray(extra, dtype=np.float64)]))


def _support_points(arrays: _Arrays, default: float) -> tuple[float, bool]:
    """(support threshold, keep vetoes): balanced accuracy within one standard error of the
    best, keeping the checker's vetoes if that is as good, then nearest its own threshold
    (`fit_points`). Claims with a Contradiction, kept or not, count as unsupported as they
    are; vetoed ones too while vetoes are kept."""
    thresholds = _candidates(arrays.entailment, THRESHOLDS, [default])
    n_pos, n_neg = int(arrays.gold.sum()), int((~arrays.gold).sum())
    rates = {}
    for keep in (True, False):
        moving = ~arrays.is_contradiction & (~arrays.vetoed if keep else True)
        positives = np.sort(arrays.entailment[moving & arrays.gold])
        negatives = np.sort(arrays.entailment[moving & ~arrays.gold])
        tpr = (len(positives) - np.searchsorted(positives, thresholds, "left")) / n_pos
        tnr = 1.0 - (len(negatives) - np.searchsorted(negatives, thresholds, "left")) / n_neg
        rates[keep] = (tpr, tnr, np.round(0.5 * (tpr + tnr), 12))
    leader = max(rates, key=lambda keep: float(rates[keep][2].max()))
    tpr, tnr, accuracy = rates[leader]
    at = int(np.argmax(accuracy))
    error = 0.5 * float(np.sqrt(tpr[at] * (1 - tpr[at]) / n_pos + tnr[at] * (1 - tnr[at]) / n_neg))
    for keep in (True, False):
        good = np.flatnonzero(rates[keep][2] >= accuracy[at] - error - 1e-12)
        if len(good):
            return float(thresholds[good[np.argmin(np.abs(thresholds[good] - default))]]), keep
    raise AssertionError("the leader is within its own standard error")


def _conflict_points(
    arrays: _Arrays, max_false_contradiction: float
) -> tuple[tuple[ConflictKind, ...], float]:
    """(counted kinds, minimum P(contradiction)): within the false-contradiction target, the
    choice keeping the most Contradictions on unsupported claims, then the lowest bar and the
    most kinds; the lowest false-contradiction rate where none meets the target. Kinds the
    labelled Contradictions do not show stay counted: no data says to drop them."""
    present = sorted({int(k) for k in arrays.kind[arrays.is_contradiction] if k >= 0})
    absent = [k for k in range(len(_KINDS)) if k not in present]
    bars = _candidates(arrays.contradiction[arrays.is_contradiction], CONTRADICTION_BARS, [0.0])
    best: tuple[tuple[float, ...], tuple[ConflictKind, ...], float] | None = None
    for size in range(len(present), -1, -1):
        for kinds in itertools.combinations(present, size):
            accepted = np.isin(arrays.kind, [*kinds, *absent, -1])
            for bar in bars:
                kept = arrays.is_contradiction & accepted & (arrays.contradiction >= bar)
                false_rate = float(kept[arrays.gold].mean())
                within = false_rate <= max_false_contradiction + 1e-12
                key = (
                    float(within),
                    0.0 if within else -false_rate,
                    float(kept[~arrays.gold].sum()),
                    -float(bar),
                    float(size),
                )
                if best is None or key > best[0]:
                    counted = tuple(_KINDS[k] for k in sorted((*kinds, *absent)))
                    best = (key, counted, float(bar))
    assert best is not None  # the empty choice of kinds is always tried
    return best[1], best[2]


def fit_points(
    rows: Sequence[Scored], defaults: DecisionPoints, max_false_contradiction: float
) -> DecisionPoints:
    """The decision points for `rows` (module docstring); `ValueError` without both a
    supported and an unsupported claim.

    The two decisions are fitted apart, as they act apart (`check.calibration.points`): the
    threshold on balanced accuracy, the conflict points on the false-contradiction rate.
    Balanced accuracy measured on a few hundred claims moves by a few points from sample to
    sample, so the best-scoring threshold overfits: any within one standard error of the best
    is as good (the one-standard-error rule), and the fit takes the one nearest the checker's
    own, keeping its vetoes where that is as good. Small data then leaves the checker as it
    was."""
    arrays = _Arrays.of(rows, defaults.support_threshold)
    if arrays.gold.all() or not arrays.gold.any():
        raise ValueError(
            "calibration needs both supported and unsupported labelled claims; "
            f"these {len(rows)} are all {'supported' if arrays.gold.any() else 'unsupported'}"
        )
    kinds, bar = _conflict_points(arrays, max_false_contradiction)
    threshold, keep_vetoes = _support_points(arrays, defaults.support_threshold)
    return DecisionPoints(
        support_threshold=threshold,
        keep_vetoes=keep_vetoes,
        min_contradiction=bar,
        conflict_kinds=kinds,
    )


def folds_by_group(rows: Sequence[Scored], folds: int, seed: int) -> list[int]:
    """Each row's fold (0 .. folds-1), whole responses dealt round, shuffled by `seed`."""
    groups = sorted({row.group for row in rows})
    random.Random(seed).shuffle(groups)
    fold_of = {group: index % folds for index, group in enumerate(groups)}
    return [fold_of[row.group] for row in rows]


def cross_validate(
    rows: Sequence[Scored],
    defaults: DecisionPoints,
    max_false_contradiction: float,
    folds: int = 5,
    seed: int = 0,
) -> CrossValidated | None:
    """Before (the checker's own labels) and after (each fold cut at the points fitted on the
    others); None with fewer than two responses. A fold whose training part lacks a class
    keeps the checker's own points."""
    k = min(folds, len({row.group for row in rows}))
    if k < 2:
        return None
    fold = folds_by_group(rows, k, seed)
    after: list[Verdict] = [row.verdict for row in rows]
    for held_out in range(k):
        training = [row for row, f in zip(rows, fold, strict=True) if f != held_out]
        try:
            points = fit_points(training, defaults, max_false_contradiction)
        except ValueError:
            points = defaults
        for index, f in enumerate(fold):
            if f == held_out:
                after[index] = relabel(rows[index].verdict, points, defaults.support_threshold)
    before = figures(rows, [row.verdict for row in rows])
    return CrossValidated(folds=k, seed=seed, before=before, after=figures(rows, after))


def calibration(
    rows: Sequence[Scored],
    identity: CheckerIdentity,
    defaults: DecisionPoints,
    data: DataSize,
    max_false_contradiction: float = DEFAULT_MAX_FALSE_CONTRADICTION,
    folds: int = 5,
    seed: int = 0,
) -> Calibration:
    """The calibration fitted on every row, with its cross-validated figures."""
    return Calibration(
        refcheck_version=__version__,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        checker=identity,
        points=fit_points(rows, defaults, max_false_contradiction),
        defaults=defaults,
        max_false_contradiction=max_false_contradiction,
        data=data,
        cross_validated=cross_validate(rows, defaults, max_false_contradiction, folds, seed),
    )
