"""Calibration on one half of each shared labelled set, measured on the other half.

For every set in the data folder (`bench.datasets`): the embedded checker (with the default
conflict stage) labels every claim once; the claims are split in two halves by group (a
response, or the source text several share: `LabelledExample.group`), seeded; the decision
points are fitted on the first half (`bench.calibration_fit.fit_points`, the same fit as
`refcheck calibrate`) and the second half is measured at the checker's own points (before) and
at the fitted ones (after): balanced accuracy, false-contradiction rate (gold-supported claims
labelled Contradiction), AUROC of P(entailment) (unchanged by design).

Caveat: the shipped embedded checker was trained on these same sets (docs/embedded_checker.md),
so its scores on them are in-sample; a team's own data is out-of-sample for it.

    flock /tmp/cpu.lock .venv/bin/python benchmarks/calibration_halves.py [--seeds 0,1,2]
        [--max-false-contradiction 0.01] [--limit N] [--dataset NAME] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from refcheck_callbacks.bench.calibration_fit import (
    DEFAULT_MAX_FALSE_CONTRADICTION,
    Scored,
    figures,
    fit_points,
    folds_by_group,
    scored,
)
from refcheck_callbacks.bench.datasets import DATASET_NAMES, load_dataset
from refcheck_callbacks.bench.runner import check_examples, subsample
from refcheck_callbacks.check.calibration.points import DecisionPoints, defaults_of, relabel
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.contract.registry import conflict_finder
from refcheck_callbacks.support.progress import Progress
from refcheck_callbacks.types import ConflictKind


def _halves(rows: list[Scored], seed: int) -> tuple[list[Scored], list[Scored]]:
    fold = folds_by_group(rows, 2, seed)
    return (
        [row for row, f in zip(rows, fold, strict=True) if f == 0],
        [row for row, f in zip(rows, fold, strict=True) if f == 1],
    )


def _one_split(
    rows: list[Scored], defaults: DecisionPoints, target: float, seed: int
) -> dict[str, object]:
    fit_half, measured = _halves(rows, seed)
    points = fit_points(fit_half, defaults, target)
    before = figures(measured, [row.verdict for row in measured])
    after = figures(
        measured, [relabel(row.verdict, points, defaults.support_threshold) for row in measured]
    )
    return {
        "seed": seed,
        "fitted_on": len(fit_half),
        "measured_on": len(measured),
        "points": points.model_dump(mode="json"),
        "before": before.model_dump(mode="json"),
        "after": after.model_dump(mode="json"),
    }


def _row(name: str, split: dict[str, object], default: float) -> str:
    before, after, points = split["before"], split["after"], split["points"]
    assert isinstance(before, dict) and isinstance(after, dict) and isinstance(points, dict)

    def rate(value: object) -> str:
        return "–" if value is None else f"{value:.3f}"

    kinds = points["conflict_kinds"]
    kept = "all" if len(kinds) == len(ConflictKind) else ", ".join(kinds) or "none"
    return (
        f"| {name} | {split['seed']} | {split['fitted_on']} / {split['measured_on']} | "
        f"{default:.3f} → {points['support_threshold']:.3f} | "
        f"{'kept' if points['keep_vetoes'] else 'dropped'} | "
        f"{points['min_contradiction']:.2f} | {kept} | "
        f"{rate(before['balanced_accuracy'])} → {rate(after['balanced_accuracy'])} | "
        f"{rate(before['false_contradiction_rate'])} → {rate(after['false_contradiction_rate'])} | "
        f"{rate(before['auroc'])} → {rate(after['auroc'])} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0", help="comma-separated split seeds")
    parser.add_argument(
        "--max-false-contradiction", type=float, default=DEFAULT_MAX_FALSE_CONTRADICTION
    )
    parser.add_argument("--limit", type=int, default=None, help="claims per set (subsample)")
    parser.add_argument(
        "--dataset", action="append", choices=DATASET_NAMES, help="a set, repeatable (default: all)"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    checker = EmbeddedChecker()
    defaults = defaults_of(checker)
    finder = conflict_finder("embedded")
    out: dict[str, list[dict[str, object]]] = {}
    print(
        "| set | seed | claims fit / measured | support threshold | vetoes | min P(C) "
        "| conflict kinds "
        "| balanced acc. | false C rate | AUROC |"
    )
    print("|---|---:|---:|---:|---|---:|---|---:|---:|---:|")
    for name in args.dataset or DATASET_NAMES:
        examples = load_dataset(name)
        if args.limit is not None:
            examples = subsample(examples, args.limit)
        progress = Progress(len(examples), name, enabled=sys.stderr.isatty())
        verdicts = asyncio.run(check_examples(checker, examples, 64, progress, finder))
        progress.close()
        rows = scored(examples, verdicts)
        out[name] = []
        for seed in seeds:
            split = _one_split(rows, defaults, args.max_false_contradiction, seed)
            out[name].append(split)
            print(_row(name, split, defaults.support_threshold), flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
