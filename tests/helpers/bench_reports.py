"""bench.json files as `refcheck bench` writes them, from label counts, for the simulator's tests.

The report is made by the bench runner's own scoring (`runner.score`) on labelled examples and
verdicts with the given counts, so the file has exactly the shape the command writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from refcheck_callbacks.bench.datasets import LabelledExample
from refcheck_callbacks.bench.runner import BenchReport, DatasetResult, score
from refcheck_callbacks.types import Label, Verdict

Counts = Sequence[int]
"""Claims labelled entailment, neutral, contradiction."""


def _scored(name: str, supported: Counts, unsupported: Counts) -> DatasetResult:
    examples, verdicts = [], []
    for gold, counts in ((True, supported), (False, unsupported)):
        for label, count in zip(
            (Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION), counts, strict=True
        ):
            for _ in range(count):
                n = len(examples)
                examples.append(
                    LabelledExample(
                        dataset=name, example_id=f"{name}{n}", group=f"g{n}", claim=f"claim {n}",
                        references=[f"reference {n}"], supported=gold,
                    )
                )  # fmt: skip
                verdicts.append(Verdict(label=label, confidence=0.9))
    checked = score("embedded", examples, verdicts, seconds=1.0)
    return DatasetResult(dataset=name, examples=len(examples), checkers=[checked])


def write_bench_json(path: Path, sets: Mapping[str, tuple[Counts, Counts]]) -> Path:
    """`sets`: name -> (supported claims' label counts, unsupported claims' label counts)."""
    report = BenchReport(
        created_at="2026-01-01T00:00:00+00:00",
        version="test",
        data_dir="-",
        limit=None,
        datasets=[_scored(name, *counts) for name, counts in sets.items()],
        unavailable={},
    )
    path.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    return path
