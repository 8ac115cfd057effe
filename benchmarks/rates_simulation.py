"""Which prevalence estimator `refcheck rates` uses: leave one shared set out at a time.

For every shared set (`bench.datasets`), held out in turn: the default offline checker (the
embedded one, default conflict stage) has labelled every claim once (cached in `--cache`, so
later runs only simulate). A draw samples an audit of `--labels` labelled claims from the set,
whole answers at a time as the monitor's audit draws them; fits the decision points on it as
`refcheck calibrate` does and relabels with them, as the pipeline then would; and builds
`--claims` claims of traffic from the set's other claims, whole answers at a time, with a true
hallucination rate of 0, 10, 30 and 50%. Each method estimates the rate from the traffic's
flags and the audit's labels:

- raw: the flagged share, with a binomial 90% interval;
- closed form: the adjusted count with Fieller's interval (`estimate.closed_form`, what the
  recording rules compute);
- probabilistic: mean P(unsupported) adjusted the same way (class means on the audit);
- median sweep: the median over support thresholds 0.05 .. 0.95 of the closed form, where
  TPR - FPR is at least 0.25 (all thresholds where none is);
- posterior: a Bayesian posterior of the share on a grid (`_posterior`), with the audit's and
  the traffic's design effects, and Beta priors over the flag rates centred on the other
  sets' flag rates; the priors' weight
  is chosen on the other sets (each scored with a centre that leaves out both it and the
  held-out set): the lowest mean absolute error among the weights whose 90% interval covers
  the truth in at least 85% of draws in every other set and rate;
- chosen: the median sweep with design effects (`sweep.median_sweep`), what `refcheck rates`
  prints; nothing in it is tuned (its thresholds and Forman's TPR - FPR >= 0.25 are fixed).

Printed: mean absolute error (points), coverage of the 90% interval (%) and mean width per set
per true rate, for each method; and the priors the shipped default is fitted with (all sets).

    flock /tmp/cpu.lock .venv/bin/python benchmarks/rates_simulation.py [--draws 100]
        [--labels 200] [--claims 2000] [--cache /tmp/rates-cache] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from refcheck_callbacks.bench.calibration_fit import (
    DEFAULT_MAX_FALSE_CONTRADICTION,
    Scored,
    fit_points,
)
from refcheck_callbacks.bench.datasets import DATASET_NAMES, LabelledExample, load_dataset
from refcheck_callbacks.bench.runner import check_examples
from refcheck_callbacks.check.calibration.clusters import cluster_ids, design_effect, flag_clusters
from refcheck_callbacks.check.calibration.estimate import (
    Z_90,
    DesignEffects,
    closed_form,
    fieller_interval,
)
from refcheck_callbacks.check.calibration.points import defaults_of, relabel
from refcheck_callbacks.check.calibration.rates import RateFit, RateName, flags
from refcheck_callbacks.check.calibration.sweep import median_sweep, sweep_points
from refcheck_callbacks.check.conflict.base import support
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.contract.registry import conflict_finder
from refcheck_callbacks.support.progress import Progress
from refcheck_callbacks.types import Verdict

RATES = (0.0, 0.1, 0.3, 0.5)
WEIGHTS = (1.0, 5.0, 20.0)
"""Prior weights tried (pseudo-labels per class)."""
METHODS = ("raw", "closed form", "probabilistic", "median sweep", "posterior", "chosen")
"""chosen: `sweep.median_sweep` with design effects, what `refcheck rates` prints."""
MIN_COVERAGE = 0.85


@dataclass
class SetData:
    name: str
    verdicts: list[Verdict]
    unsupported: np.ndarray
    answers: dict[str, list[int]]
    claims: list[str]


def _predictions(name: str, cache: Path) -> list[tuple[LabelledExample, Verdict | None]]:
    path = cache / f"{name}.jsonl"
    if not path.exists():
        examples = load_dataset(name)
        checker, finder = EmbeddedChecker(), conflict_finder("embedded")
        progress = Progress(len(examples), name, enabled=False)
        verdicts = asyncio.run(check_examples(checker, examples, 64, progress, finder))
        cache.mkdir(parents=True, exist_ok=True)
        lines = [
            json.dumps(
                {
                    "example": e.model_dump(mode="json"),
                    "verdict": None if v is None else v.model_dump(mode="json"),
                }
            )
            for e, v in zip(examples, verdicts, strict=True)
        ]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [
        (
            LabelledExample.model_validate(row["example"]),
            None if row["verdict"] is None else Verdict.model_validate(row["verdict"]),
        )
        for row in rows
    ]


def load_set(name: str, cache: Path) -> SetData:
    pairs = [(e, v) for e, v in _predictions(name, cache) if v is not None and v.label]
    answers: dict[str, list[int]] = defaultdict(list)
    for index, (example, _) in enumerate(pairs):
        answers[example.response_id or example.example_id].append(index)
    return SetData(
        name,
        [v for _, v in pairs],
        np.array([not e.supported for e, _ in pairs]),
        dict(answers),
        [e.claim for e, _ in pairs],
    )


def _audit(data: SetData, labels: int, rng: np.random.Generator) -> list[list[int]]:
    """Whole answers, at random, until `labels` claims are drawn."""
    drawn: list[list[int]] = []
    names = list(data.answers)
    for position in rng.permutation(len(names)):
        drawn.append(data.answers[names[position]])
        if sum(map(len, drawn)) >= labels:
            break
    return drawn


def _traffic(
    data: SetData, audited: set[int], claims: int, rate: float, rng: np.random.Generator
) -> list[list[int]]:
    """Answers of the set's other claims, at random and again when all were used, each kept
    to the claims the quotas still need: `rate` of `claims` unsupported, the rest supported."""
    wanted = {True: round(rate * claims), False: claims - round(rate * claims)}
    pool = [
        [i for i in answer if i not in audited]
        for answer in data.answers.values()
        if any(i not in audited for i in answer)
    ]
    records: list[list[int]] = []
    while wanted[True] or wanted[False]:
        for position in rng.permutation(len(pool)):
            record = []
            for index in pool[position]:
                kind = bool(data.unsupported[index])
                if wanted[kind]:
                    wanted[kind] -= 1
                    record.append(index)
            if record:
                records.append(record)
            if not (wanted[True] or wanted[False]):
                break
    return records


def _relabelled(data: SetData, audit: list[int], used: set[int]) -> dict[int, Verdict]:
    """The pipeline's verdicts at the points `refcheck calibrate` fits on the audit."""
    own = defaults_of(EmbeddedChecker)
    rows = [Scored(str(i), not data.unsupported[i], data.verdicts[i]) for i in audit]
    try:
        points = fit_points(rows, own, DEFAULT_MAX_FALSE_CONTRADICTION)
    except ValueError:
        points = own
    return {i: relabel(data.verdicts[i], points, own.support_threshold) for i in used}


def _design(data: SetData, records: list[list[int]], flagged: dict[int, bool]) -> float:
    ids = cluster_ids([[data.claims[i] for i in record] for record in records])
    return design_effect(
        flag_clusters(
            [c for cs in ids for c in cs], [flagged[i] for record in records for i in record]
        )
    )


@dataclass
class Draw:
    """What every method reads from one draw."""

    fit: RateFit
    """With the sweep's counts and the audit's design effects."""
    claims: int
    flagged: int
    traffic_design_effect: float
    audit_scores: tuple[np.ndarray, np.ndarray]
    """P(unsupported) of the audit's unsupported and supported claims."""
    traffic_scores: np.ndarray


def one_draw(
    data: SetData, labels: int, claims: int, rate: float, rng: np.random.Generator
) -> Draw:
    audit_records = _audit(data, labels, rng)
    audit = [i for record in audit_records for i in record]
    traffic = _traffic(data, set(audit), claims, rate, rng)
    used = set(audit) | {i for record in traffic for i in record}
    verdicts = _relabelled(data, audit, used)
    flagged = {i: flags(RateName.HALLUCINATION, verdicts[i]) for i in used}
    positives = [i for i in audit if data.unsupported[i]]
    negatives = [i for i in audit if not data.unsupported[i]]
    ids = cluster_ids([[data.claims[i] for i in record] for record in audit_records])
    cluster_of = {
        i: c for cs, r in zip(ids, audit_records, strict=True) for c, i in zip(cs, r, strict=True)
    }
    by_class = {
        kind: design_effect(
            flag_clusters([cluster_of[i] for i in members], [flagged[i] for i in members])
        )
        for kind, members in ((True, positives), (False, negatives))
    }
    fit = RateFit(
        positives=len(positives),
        negatives=len(negatives),
        flagged_positives=sum(flagged[i] for i in positives),
        flagged_negatives=sum(flagged[i] for i in negatives),
        positive_design_effect=by_class[True],
        negative_design_effect=by_class[False],
    )
    traffic_claims = [i for record in traffic for i in record]
    score = {i: 1.0 - support(verdicts[i]) for i in used}
    fit = fit.model_copy(
        update={
            "sweep": sweep_points(
                [1.0 - score[i] for i in positives], [1.0 - score[i] for i in negatives]
            )
        }
    )
    return Draw(
        fit=fit,
        claims=len(traffic_claims),
        flagged=sum(flagged[i] for i in traffic_claims),
        traffic_design_effect=_design(data, traffic, flagged),
        audit_scores=(
            np.array([score[i] for i in positives]),
            np.array([score[i] for i in negatives]),
        ),
        traffic_scores=np.array([score[i] for i in traffic_claims]),
    )


Interval = tuple[float, float, float]


def _raw(draw: Draw) -> Interval:
    q = draw.flagged / draw.claims
    half = Z_90 * (q * (1 - q) / draw.claims) ** 0.5
    return q, max(q - half, 0.0), min(q + half, 1.0)


def _closed(draw: Draw, fit: RateFit | None = None, flagged: int | None = None) -> Interval:
    estimate = closed_form(
        draw.claims, draw.flagged if flagged is None else flagged, fit or draw.fit
    )
    assert estimate.raw is not None
    if estimate.adjusted is None or estimate.low is None or estimate.high is None:
        return estimate.raw, 0.0, 1.0
    return estimate.adjusted, estimate.low, estimate.high


def _probabilistic(draw: Draw) -> Interval:
    positives, negatives = draw.audit_scores
    p, tpr, fpr = draw.traffic_scores.mean(), positives.mean(), negatives.mean()
    a, b = p - fpr, tpr - fpr
    var_p = draw.traffic_scores.var() / len(draw.traffic_scores)
    var_t, var_f = positives.var() / len(positives), negatives.var() / len(negatives)
    low, high = fieller_interval(a, b, var_p + var_f, var_t + var_f, var_f, Z_90)
    point = min(max(a / b, 0.0), 1.0) if b > 0 else p
    return point, min(low, point), max(high, point)


def _sweep(draw: Draw, design: DesignEffects | None = None) -> Interval:
    estimate = median_sweep(
        draw.claims, draw.flagged, 1.0 - draw.traffic_scores, draw.fit, design or DesignEffects()
    )
    assert estimate.adjusted is not None and estimate.low is not None and estimate.high is not None
    return estimate.adjusted, estimate.low, estimate.high


def _chosen(draw: Draw) -> Interval:
    fit = draw.fit
    return _sweep(
        draw,
        DesignEffects(
            draw.traffic_design_effect, fit.positive_design_effect, fit.negative_design_effect
        ),
    )


@dataclass(frozen=True)
class RatePrior:
    """Beta priors over the flag rates: `weight` pseudo-labels per class at these centres."""

    true_positive_rate: float
    false_positive_rate: float
    weight: float


_SHARES = np.linspace(0.0, 1.0, 201)
_FLAG_RATES = (np.arange(64) + 0.5) / 64


def _log_binomial(x: np.ndarray, hits: float, total: float) -> np.ndarray:
    return hits * np.log(x) + (total - hits) * np.log1p(-x)


def _posterior(draw: Draw, prior: RatePrior) -> Interval:
    """The share's posterior on a grid: binomial likelihoods of the audit's flags per class and
    of the traffic's flags (`p TPR + (1 - p) FPR`), each count divided by its design effect;
    Beta priors over TPR > FPR, uniform over the share. Median and 90% highest density."""
    fit = draw.fit
    tpr, fpr = _FLAG_RATES[:, None], _FLAG_RATES[None, :]
    audit = (
        _log_binomial(tpr, prior.weight * prior.true_positive_rate, prior.weight)
        + _log_binomial(fpr, prior.weight * prior.false_positive_rate, prior.weight)
        + _log_binomial(
            tpr,
            fit.flagged_positives / fit.positive_design_effect,
            fit.positives / fit.positive_design_effect,
        )
        + _log_binomial(
            fpr,
            fit.flagged_negatives / fit.negative_design_effect,
            fit.negatives / fit.negative_design_effect,
        )
    )
    audit = np.exp(np.where(tpr > fpr, audit, -np.inf) - audit.max())
    q = _SHARES[:, None, None] * tpr + (1.0 - _SHARES[:, None, None]) * fpr
    deff = draw.traffic_design_effect
    traffic = _log_binomial(q, draw.flagged / deff, draw.claims / deff)
    density = (np.exp(traffic - traffic.max()) * audit).sum(axis=(1, 2))
    density /= density.sum()
    median = float(_SHARES[int(np.searchsorted(np.cumsum(density), 0.5))])
    order = np.argsort(-density, kind="stable")
    kept = order[: int(np.searchsorted(np.cumsum(density[order]), 0.9)) + 1]
    low, high = float(_SHARES[kept.min()]), float(_SHARES[kept.max()])
    return median, min(low, median), max(high, median)


def _own_rates(data: SetData) -> tuple[float, float]:
    flagged = np.array([flags(RateName.HALLUCINATION, v) for v in data.verdicts])
    return float(flagged[data.unsupported].mean()), float(flagged[~data.unsupported].mean())


def prior_from(own: dict[str, tuple[float, float]], names: list[str], weight: float) -> RatePrior:
    return RatePrior(
        true_positive_rate=statistics.mean(own[n][0] for n in names),
        false_positive_rate=statistics.mean(own[n][1] for n in names),
        weight=weight,
    )


def score(results: list[Interval], truth: float) -> dict[str, float]:
    values = np.array(results, dtype=np.float64)
    return {
        "mae": float(np.abs(values[:, 0] - truth).mean() * 100),
        "coverage": float(((values[:, 1] <= truth + 1e-9) & (truth - 1e-9 <= values[:, 2])).mean()),
        "width": float((values[:, 2] - values[:, 1]).mean() * 100),
    }


def _choose_weight(
    tuning: dict[tuple[str, str, float, float], list[Interval]], held_out: str, names: list[str]
) -> float:
    """The weight with the lowest mean error on the other sets among those covering in at least
    85% of draws everywhere (else the one with the best worst coverage)."""
    figures = {}
    for weight in WEIGHTS:
        scored = [
            score(tuning[(held_out, name, rate, weight)], rate)
            for name in names
            if name != held_out
            for rate in RATES
        ]
        worst = min(s["coverage"] for s in scored)
        figures[weight] = (
            worst >= MIN_COVERAGE,
            worst if worst < MIN_COVERAGE else 0.0,
            -statistics.mean(s["mae"] for s in scored),
        )
    return max(WEIGHTS, key=lambda w: figures[w])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=100, help="draws per set and rate")
    parser.add_argument("--labels", type=int, default=200, help="audit labels per draw")
    parser.add_argument("--claims", type=int, default=2000, help="traffic claims per draw")
    parser.add_argument(
        "--tuning-draws", type=int, default=30, help="draws per set and rate for the weight"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/rates-cache"))
    parser.add_argument("--dataset", action="append", choices=DATASET_NAMES)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    names = list(args.dataset or DATASET_NAMES)
    sets = {name: load_set(name, args.cache) for name in names}
    own = {name: _own_rates(data) for name, data in sets.items()}
    rng = np.random.default_rng(args.seed)
    draws = {
        (name, rate): [
            one_draw(data, args.labels, args.claims, rate, rng) for _ in range(args.draws)
        ]
        for name, data in sets.items()
        for rate in RATES
    }
    tuning = {
        (held_out, name, rate, weight): [
            _posterior(d, prior_from(own, [n for n in names if n not in (name, held_out)], weight))
            for d in draws[(name, rate)][: args.tuning_draws]
        ]
        for held_out in names
        for name in names
        if name != held_out
        for rate in RATES
        for weight in WEIGHTS
    }
    out: dict[str, object] = {}
    print(
        "| set | true rate | prior weight | "
        + " | ".join(f"{m} MAE / cov. / width" for m in METHODS)
        + " |"
    )
    print("|---|---:|---:|" + "---:|" * len(METHODS))
    for held_out in names:
        weight = _choose_weight(tuning, held_out, names)
        prior = prior_from(own, [n for n in names if n != held_out], weight)
        for rate in RATES:
            found = {
                "raw": [_raw(d) for d in draws[(held_out, rate)]],
                "closed form": [_closed(d) for d in draws[(held_out, rate)]],
                "probabilistic": [_probabilistic(d) for d in draws[(held_out, rate)]],
                "median sweep": [_sweep(d) for d in draws[(held_out, rate)]],
                "posterior": [_posterior(d, prior) for d in draws[(held_out, rate)]],
                "chosen": [_chosen(d) for d in draws[(held_out, rate)]],
            }
            figures = {method: score(results, rate) for method, results in found.items()}
            out[f"{held_out}/{rate}"] = {"weight": weight, "prior": vars(prior), **figures}
            cells = " | ".join(
                f"{f['mae']:.1f} / {100 * f['coverage']:.0f}% / {f['width']:.0f}"
                for f in figures.values()
            )
            print(f"| {held_out} | {100 * rate:.0f}% | {weight:g} | {cells} |", flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
