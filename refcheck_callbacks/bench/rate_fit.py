"""Fitting a calibration's flag rates on audit labels (`refcheck calibrate`, docs/rates.md).

Only claims of records the monitor's random audit drew (`"audit": true`) count: feedback is
given where users saw a problem, so its labels are not a random sample, and flag rates
measured on them would be biased. Of those, the latest `window` labelled claims are used (by
`labelled_at`, else `drawn_at`, else their place in the file), so the rates follow the
traffic as it drifts. The flags are the pipeline's labels at the newly fitted decision points,
which is what `refcheck check --calibration` and the monitor will then count.

- hallucination: every audit label (supported or not); the fit keeps the flag counts at the
  median sweep's thresholds too (`sweep.sweep_points`);
- contradiction: only claims labelled 3-way (`Contradiction` vs `Entailment` / `Neutral`);
  a `true` / `false` label cannot say whether the claim was contradicted.

Each rate's fit records the audit's design effects per class (`clusters`): the claims of one
audited answer are flagged together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from refcheck_callbacks.bench.datasets import LabelledExample, gold_supported
from refcheck_callbacks.check.calibration.clusters import (
    cluster_ids,
    design_effect,
    flag_clusters,
)
from refcheck_callbacks.check.calibration.rates import RateFit, RateName, SweepPoint, flags
from refcheck_callbacks.check.calibration.sweep import sweep_points
from refcheck_callbacks.check.conflict.base import support
from refcheck_callbacks.types import Label, Verdict

DEFAULT_AUDIT_WINDOW = 1000
"""The latest audit labels the flag rates are fitted on (docs/rates.md: the window's width)."""


def latest(audited: Mapping[int, tuple[str, int]], window: int) -> list[int]:
    """The `window` most recently labelled of the audited claims (indexes into the examples),
    oldest first; ties keep file order."""
    order = sorted(audited, key=lambda index: (audited[index], index))
    return order[-window:] if window > 0 else []


def _kind(rate: RateName, example: LabelledExample) -> bool | None:
    """Whether the gold label is of the rate's kind; None where it cannot say."""
    if rate is RateName.HALLUCINATION:
        supported = gold_supported(example)
        return None if supported is None else not supported
    return None if example.label is None else example.label is Label.CONTRADICTION


def _fit_one(
    rate: RateName,
    members: list[tuple[LabelledExample, Verdict, bool]],
) -> RateFit:
    answers: dict[str, list[str]] = {}
    for example, _, _ in members:
        answers.setdefault(example.group, []).append(example.claim)
    ids = cluster_ids(list(answers.values()))
    cluster = {group: claim_ids[0] for group, claim_ids in zip(answers, ids, strict=True)}
    cluster_of = [cluster[example.group] for example, _, _ in members]
    counts = {}
    for kind in (True, False):
        chosen = [i for i, (_, _, k) in enumerate(members) if k is kind]
        flagged = [flags(rate, members[i][1]) for i in chosen]
        effect = design_effect(flag_clusters([cluster_of[i] for i in chosen], flagged))
        counts[kind] = (len(chosen), sum(flagged), effect)
    sweep: tuple[SweepPoint, ...] = ()
    if rate is RateName.HALLUCINATION:
        sweep = sweep_points(
            [support(v) for _, v, kind in members if kind],
            [support(v) for _, v, kind in members if not kind],
        )
    return RateFit(
        positives=counts[True][0],
        negatives=counts[False][0],
        flagged_positives=counts[True][1],
        flagged_negatives=counts[False][1],
        positive_design_effect=counts[True][2],
        negative_design_effect=counts[False][2],
        sweep=sweep,
    )


def fit_rates(
    examples: Sequence[LabelledExample],
    verdicts: Sequence[Verdict | None],
    audited: Mapping[int, tuple[str, int]],
    window: int = DEFAULT_AUDIT_WINDOW,
) -> dict[RateName, RateFit]:
    """The flag rates of the latest `window` audit labels (module docstring), `verdicts` the
    pipeline's at the fitted points (None: the checker failed on the claim, left out). A rate
    no audit label can speak to is left out: uncalibrated."""
    chosen = [i for i in latest(audited, window) if verdicts[i] is not None]
    fits = {}
    for rate in RateName:
        members = []
        for index in chosen:
            kind = _kind(rate, examples[index])
            verdict = verdicts[index]
            if kind is not None and verdict is not None:
                members.append((examples[index], verdict, kind))
        if members:
            fits[rate] = _fit_one(rate, members)
    return fits
