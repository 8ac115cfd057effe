"""Fitting a cascade's thresholds on labelled claims: `refcheck bench --fit-cascade SPEC`.

Every stage labels every claim once; a cascade with any thresholds is then replayed exactly from
those verdicts (a claim goes on from a stage when its confidence is below the stage's threshold,
its label is one the stage always passes on, or the stage failed), so the search over
thresholds costs no further model call. Candidate thresholds are quantiles of each stage's own
confidences (every percentile for one threshold; fewer per stage as stages are added, so the
grid stays near a few thousand cascades).

The target is either a share of claims reaching the last (dearest) stage, where the fit takes
the highest balanced accuracy within it, or a balanced accuracy, where it takes the smallest
share that reaches it. Balanced accuracy is that of supported vs not, the view every labelled
set has; claims the deciding stage failed on are left out of it and counted, as `bench` does.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from refcheck_callbacks.bench.datasets import LabelledExample
from refcheck_callbacks.bench.metrics import balanced_accuracy
from refcheck_callbacks.bench.runner import BenchOptions, check_examples, gold_supported, load_sets
from refcheck_callbacks.check.cascade import (
    CascadeChecker,
    CascadeStage,
    Certainty,
    certainty,
    support_threshold,
)
from refcheck_callbacks.support.progress import Progress
from refcheck_callbacks.types import Label, Verdict

_GRID_BUDGET = 3000
"""About how many threshold combinations are replayed."""


@dataclass(frozen=True)
class StageRule:
    """When a stage passes a claim on, thresholds aside (see `CascadeStage`)."""

    escalate: frozenset[Label] = frozenset()
    by: Certainty = "confidence"
    support_threshold: float = 0.5

    @classmethod
    def of(cls, stage: CascadeStage) -> StageRule:
        return cls(frozenset(stage.escalate), stage.by, support_threshold(stage.checker))

    def certainty(self, verdict: Verdict) -> float:
        return certainty(verdict, self.by, self.support_threshold)


class CascadePoint(BaseModel):
    thresholds: list[float]
    """One per stage but the last."""
    balanced_accuracy: float
    reached: list[float]
    """Share of claims each stage saw (1.0 for the first)."""
    failed: int
    """Claims whose deciding stage gave no label."""

    @property
    def escalated(self) -> float:
        """Share of claims that reached the last stage."""
        return self.reached[-1]


class CascadeFit(BaseModel):
    stages: list[str]
    claims: int
    chosen: CascadePoint | None
    """None when no cascade meets the target; `frontier` shows what can be had."""
    target: str
    stage_alone: dict[str, float]
    """Balanced accuracy of each stage deciding every claim."""
    frontier: list[CascadePoint]
    """The cascades no other beats on both balanced accuracy and share escalated."""


def replay(
    gold: Sequence[bool],
    verdicts: Sequence[Sequence[Verdict | None]],
    rules: Sequence[StageRule],
    thresholds: Sequence[float],
) -> CascadePoint:
    """The outcome of the cascade with `thresholds` on claims every stage has labelled.

    `verdicts[k][i]` is stage k's verdict on claim i (None: the stage failed on it).
    """
    stages = len(verdicts)
    reached = [0] * stages
    truth, said = [], []
    for i, supported in enumerate(gold):
        for k in range(stages):
            reached[k] += 1
            verdict = verdicts[k][i]
            if k == stages - 1 or not _passes_on(verdict, rules[k], thresholds[k]):
                break
        if verdict is not None and verdict.label is not None:
            truth.append(supported)
            said.append(verdict.label is Label.ENTAILMENT)
    return CascadePoint(
        thresholds=list(thresholds),
        balanced_accuracy=balanced_accuracy(truth, said),
        reached=[count / max(1, len(gold)) for count in reached],
        failed=len(gold) - len(truth),
    )


def _passes_on(verdict: Verdict | None, rule: StageRule, threshold: float) -> bool:
    return (
        verdict is None
        or verdict.label is None
        or rule.certainty(verdict) < threshold
        or verdict.label in rule.escalate
    )


def _candidates(verdicts: Sequence[Verdict | None], rule: StageRule, count: int) -> list[float]:
    """`count` quantiles of a stage's sureness (0 passes nothing on, 1+ passes all)."""
    confidences = sorted(
        rule.certainty(v) for v in verdicts if v is not None and v.label is not None
    )
    if not confidences:
        return [0.0]
    picked = {confidences[min(len(confidences) - 1, q * len(confidences) // count)]
              for q in range(count)}  # fmt: skip
    return sorted({0.0, 1.0 + 1e-9, *picked})


def _frontier(points: list[CascadePoint]) -> list[CascadePoint]:
    best: list[CascadePoint] = []
    for point in sorted(points, key=lambda p: (p.escalated, -p.balanced_accuracy)):
        if not best or point.balanced_accuracy > best[-1].balanced_accuracy:
            best.append(point)
    return best


def fit(
    stages: Sequence[str],
    gold: Sequence[bool],
    verdicts: Sequence[Sequence[Verdict | None]],
    rules: Sequence[StageRule],
    *,
    target_escalation: float | None = None,
    target_balanced_accuracy: float | None = None,
) -> CascadeFit:
    """The thresholds that meet the target best; see the module docstring."""
    if (target_escalation is None) == (target_balanced_accuracy is None):
        raise ValueError("give one target: a share escalated or a balanced accuracy")
    free = len(stages) - 1
    per_stage = max(3, int(_GRID_BUDGET ** (1 / free))) if free else 1
    grids = [_candidates(verdicts[k], rules[k], min(100, per_stage)) for k in range(free)]
    points = [replay(gold, verdicts, rules, t) for t in itertools.product(*grids)]
    if target_escalation is not None:
        within = [p for p in points if p.escalated <= target_escalation + 1e-12]
        chosen = max(within, key=lambda p: (p.balanced_accuracy, -p.escalated), default=None)
        target = f"at most {target_escalation:.0%} of claims escalated to {stages[-1]}"
    else:
        assert target_balanced_accuracy is not None
        good = [p for p in points if p.balanced_accuracy >= target_balanced_accuracy]
        chosen = min(good, key=lambda p: (p.escalated, -p.balanced_accuracy), default=None)
        target = f"balanced accuracy at least {target_balanced_accuracy:.3f}"
    alone = {
        name: replay(gold, [verdicts[k]], [rules[k]], []).balanced_accuracy
        for k, name in enumerate(stages)
    }
    return CascadeFit(
        stages=list(stages),
        claims=len(gold),
        chosen=chosen,
        target=target,
        stage_alone=alone,
        frontier=_frontier(points),
    )


def fitted_spec(stage_specs: Sequence[str], point: CascadePoint) -> str:
    """The cascade spec with `point`'s thresholds written into its stages (labels kept)."""
    parts = []
    for k, spec in enumerate(stage_specs):
        if k == len(stage_specs) - 1:
            parts.append(spec)
            continue
        base, _, options = spec.partition("[")
        labels = [o for o in options.rstrip("]").split(",") if o and not o[0].isdigit()]
        threshold = min(1.0, point.thresholds[k])
        parts.append(f"{base}[{','.join([f'{threshold:.4g}', *labels])}]")
    return "cascade:" + ">".join(parts)


class CascadeFitReport(BaseModel):
    spec: str
    fitted_spec: str | None
    fit: CascadeFit
    per_dataset: dict[str, CascadePoint]
    """Each set at the chosen thresholds (absent when nothing met the target)."""
    unavailable: dict[str, str]


async def _stage_verdicts(
    cascade: CascadeChecker, examples: dict[str, list[LabelledExample]], options: BenchOptions
) -> dict[str, list[list[Verdict | None]]]:
    """Every stage's verdict on every example, per set."""
    out: dict[str, list[list[Verdict | None]]] = {}
    for name, rows in examples.items():
        out[name] = []
        for stage, part in cascade.stages:
            progress = Progress(len(rows), f"{name} / {stage}", enabled=options.progress)
            out[name].append(await check_examples(part.checker, rows, options.batch_size, progress))
            progress.close()
    return out


def run_cascade_fit(
    options: BenchOptions,
    spec: str,
    cascade: CascadeChecker,
    *,
    target_escalation: float | None = None,
    target_balanced_accuracy: float | None = None,
) -> tuple[CascadeFitReport, Path]:
    """Label the sets with every stage, fit the thresholds on all of them pooled, replay each
    set at the fit, and write `cascade_fit.json` to the output directory."""
    unavailable: dict[str, str] = {}
    loaded = {
        name: [e for e in rows if gold_supported(e) is not None]
        for name, rows in load_sets(options, unavailable).items()
    }
    if not any(loaded.values()):
        raise ValueError("no labelled claims could be loaded; see the messages above")
    per_set = asyncio.run(_stage_verdicts(cascade, loaded, options))
    rules = [StageRule.of(stage) for _, stage in cascade.stages]
    gold = {name: [bool(gold_supported(e)) for e in rows] for name, rows in loaded.items()}
    pooled = [[v for name in loaded for v in per_set[name][k]] for k in range(len(cascade.stages))]
    result = fit(
        [name for name, _ in cascade.stages],
        [g for name in loaded for g in gold[name]],
        pooled,
        rules,
        target_escalation=target_escalation,
        target_balanced_accuracy=target_balanced_accuracy,
    )
    chosen = result.chosen
    report = CascadeFitReport(
        spec=spec,
        fitted_spec=None
        if chosen is None
        else fitted_spec(spec.removeprefix("cascade:").split(">"), chosen),
        fit=result,
        per_dataset={}
        if chosen is None
        else {name: replay(gold[name], per_set[name], rules, chosen.thresholds) for name in loaded},
        unavailable=unavailable,
    )
    options.output_dir.mkdir(parents=True, exist_ok=True)
    path = options.output_dir / "cascade_fit.json"
    path.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    return report, path
