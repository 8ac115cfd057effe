"""`refcheck bench`'s estimated hallucination rate: what `refcheck rates` would print for a
labelled set, from an audit of a few of its labels (docs/rates.md).

Whole responses are drawn at random (seeded) until `AUDIT_LABELS` labelled claims form the
audit; the set's other claims are the traffic, at its own share of unsupported claims (the
true rate, which the report shows beside the raw share and the estimate). The flag rates are
the checker's at its own decision points (bench fits none).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence

from refcheck_callbacks.bench.datasets import LabelledExample, gold_supported
from refcheck_callbacks.bench.rate_fit import fit_rates
from refcheck_callbacks.bench.results import RateScores
from refcheck_callbacks.check.calibration.clusters import cluster_ids, design_effect, flag_clusters
from refcheck_callbacks.check.calibration.estimate import DesignEffects
from refcheck_callbacks.check.calibration.rates import RateName, flags
from refcheck_callbacks.check.calibration.sweep import median_sweep
from refcheck_callbacks.check.conflict.base import support
from refcheck_callbacks.types import Verdict

AUDIT_LABELS = 200
"""The audit's size: the labels docs/rates.md measures the estimate with."""


def rate_scores(
    pairs: Sequence[tuple[LabelledExample, Verdict]], seed: int = 0
) -> RateScores | None:
    """The module docstring's figures; None for a set too small to leave traffic."""
    known = [(e, v) for e, v in pairs if gold_supported(e) is not None]
    if len(known) < 2 * AUDIT_LABELS:
        return None
    responses: dict[str, list[int]] = defaultdict(list)
    for index, (example, _) in enumerate(known):
        responses[example.response_id or example.example_id].append(index)
    names = sorted(responses)
    random.Random(seed).shuffle(names)
    audit: list[int] = []
    for name in names:
        if len(audit) >= AUDIT_LABELS:
            break
        audit += responses[name]
    audited = {index: ("", index) for index in audit}
    fit = fit_rates([e for e, _ in known], [v for _, v in known], audited, len(audit))
    chosen = set(audit)
    traffic = [[i for i in members if i not in chosen] for members in responses.values()]
    traffic = [members for members in traffic if members]
    ids = [c for cs in cluster_ids([[known[i][0].claim for i in m] for m in traffic]) for c in cs]
    claims = [i for members in traffic for i in members]
    flagged = [flags(RateName.HALLUCINATION, known[i][1]) for i in claims]
    hallucination = fit.get(RateName.HALLUCINATION)
    design = DesignEffects(
        design_effect(flag_clusters(ids, flagged)),
        hallucination.positive_design_effect if hallucination else 1.0,
        hallucination.negative_design_effect if hallucination else 1.0,
    )
    estimate = median_sweep(
        len(claims), sum(flagged), [support(known[i][1]) for i in claims], hallucination, design
    )
    return RateScores(
        audit_labels=len(audit),
        claims=len(claims),
        true=sum(not gold_supported(known[i][0]) for i in claims) / len(claims),
        raw=estimate.raw,
        adjusted=estimate.adjusted,
        low=estimate.low,
        high=estimate.high,
    )
