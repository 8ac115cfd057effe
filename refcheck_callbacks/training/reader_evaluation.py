"""Scoring a leave-one-set-out fold: the held-out set and its planted edits, checked the way
`refcheck bench` checks them (the monitor's pipeline, conflict stage included).

Per checker (the embedded checker as "before", the fold's reader, and the cascade that sends
the embedded checker's unsure claims to the reader) and held-out set: AUROC of P(entailment),
balanced accuracy, the false-contradiction rate on gold-supported claims, and on the set's
planted edits (`bench.planted_edits`) the share labelled Contradiction and the controls'
false-contradiction rate.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel

from refcheck_callbacks.bench.datasets import LabelledExample, load_dataset
from refcheck_callbacks.bench.planted_edits import planted_examples
from refcheck_callbacks.bench.results import CheckerScores
from refcheck_callbacks.bench.runner import check_examples, score, subsample
from refcheck_callbacks.contract.components import Checker
from refcheck_callbacks.support.progress import Progress

CASCADE_MARGIN = 0.1145
"""The embedded checker's margin below which a claim goes on to the reader: the threshold
docs/cascade.md fitted for about 40% escalated claims (fit it again for the reader)."""


class FoldScores(BaseModel):
    checker: str
    dataset: str
    examples: int
    auroc: float | None
    balanced_accuracy: float | None
    false_contradiction_rate: float | None
    planted_edits: int
    planted_recall: float | None
    """Planted edits labelled Contradiction."""
    planted_false_contradiction_rate: float | None
    """Their unchanged controls labelled Contradiction."""
    claims_per_second: float


def _scores(
    checker: Checker, examples: list[LabelledExample], batch_size: int
) -> tuple[CheckerScores, float]:
    started = time.perf_counter()
    verdicts = asyncio.run(
        check_examples(checker, examples, batch_size, Progress(len(examples), "", enabled=False))
    )
    seconds = time.perf_counter() - started
    return score("fold", examples, verdicts, seconds), seconds


def evaluate_fold(
    held_out: str,
    checkers: Mapping[str, Checker],
    root: Path | None = None,
    limit: int | None = None,
    seed: int = 0,
    batch_size: int = 64,
) -> list[FoldScores]:
    """Each checker's scores on `held_out` (at most `limit` claims, drawn by response) and on
    planted edits of its supported claims (at most `limit` pairs)."""
    examples = load_dataset(held_out, root)
    planted = planted_examples(examples)
    if limit is not None:
        examples = subsample(examples, limit, seed)
        planted = planted[: limit - limit % 2]
    results = []
    for name, checker in checkers.items():
        own, seconds = _scores(checker, examples, batch_size)
        edits = _scores(checker, planted, batch_size)[0].contradiction if planted else None
        binary, conflict = own.binary, own.contradiction
        results.append(
            FoldScores(
                checker=name,
                dataset=held_out,
                examples=len(examples),
                auroc=binary.auroc if binary else None,
                balanced_accuracy=binary.balanced_accuracy if binary else None,
                false_contradiction_rate=conflict.false_contradiction_rate if conflict else None,
                planted_edits=len(planted) // 2,
                planted_recall=edits.contradiction_recall if edits else None,
                planted_false_contradiction_rate=edits.false_contradiction_rate if edits else None,
                claims_per_second=len(examples) / seconds if seconds > 0 else 0.0,
            )
        )
    return results


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def markdown_table(scores: list[FoldScores]) -> str:
    lines = [
        "| held-out set | checker | claims | AUROC | balanced acc. | false contradictions "
        "| planted edits | planted recall | planted controls as Contradiction | claims/s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {s.dataset} | {s.checker} | {s.examples} | {_cell(s.auroc)} "
        f"| {_cell(s.balanced_accuracy)} | {_cell(s.false_contradiction_rate)} "
        f"| {s.planted_edits} | {_cell(s.planted_recall)} "
        f"| {_cell(s.planted_false_contradiction_rate)} | {s.claims_per_second:.1f} |"
        for s in scores
    ]
    return "\n".join(lines)
