"""`refcheck rates`: the hallucination and contradiction rates of a checked file, estimated.

Reads the output of `refcheck check` (JSON Lines or a JSON list; each record's `refcheck`
object lists its claims with the pipeline's label and probabilities) and a calibration with
audit flag rates (`refcheck calibrate` on audit labels), and prints, per rate, the raw flagged
share and the estimate with its 90% interval (`check.calibration.sweep`, docs/rates.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from refcheck_callbacks.cli.exit_status import EXIT_FAILED, EXIT_OK, EXIT_SKIPPED
from refcheck_callbacks.cli.exit_status import fail as _fail

if TYPE_CHECKING:
    from refcheck_callbacks.check.calibration.file import Calibration

SUMMARY = "estimate the hallucination and contradiction rates of a checked file"
_LABELS = ("Entailment", "Neutral", "Contradiction")


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "rates",
        help=SUMMARY,
        description=f"{SUMMARY}.\n\nInput: the output of `refcheck check` (checked with the "
        'same calibration). Prints JSON:\n  {"hallucination": {"claims", "raw", '
        '"adjusted", "low", "high", "labels"}, "contradiction": {...},\n   '
        '"calibration": ID}\nraw: the flagged share; adjusted, low, high: the estimate and '
        "its 90% interval (null, with a\nmessage, while the calibration has too few audit "
        "labels); labels: the audit labels it used.\nA record without a `refcheck` claim list "
        "is reported and skipped (exit status 3).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=run)
    parser.add_argument("--input", type=Path, required=True, help="checked records")
    parser.add_argument(
        "--calibration", type=Path, required=True, help="the calibration file (JSON)"
    )


@dataclass
class CheckedClaims:
    """The checked claims of a file, per answer: (label, P(entailment)) and the claim text."""

    answers: list[list[tuple[str, float, str]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    checkers: set[str] = field(default_factory=set)


def _support(claim: dict[str, Any], label: str) -> float:
    """P(entailment): from the probabilities, else the confidence (`bench.runner`)."""
    probabilities = claim.get("probabilities") or {}
    value = probabilities.get("Entailment")
    if isinstance(value, int | float):
        return float(value)
    confidence = claim.get("confidence")
    confidence = float(confidence) if isinstance(confidence, int | float) else 0.5
    return confidence if label == "Entailment" else 1.0 - confidence


def _answer(raw: Any) -> tuple[list[tuple[str, float, str]], str]:
    """The claims with a label of one record, or why the record cannot be read."""
    ours = raw.get("refcheck") if isinstance(raw, dict) else None
    claims = ours.get("claims") if isinstance(ours, dict) else None
    if not isinstance(claims, list):
        return [], "no `refcheck.claims` list: is this the output of `refcheck check`?"
    found = []
    for position, claim in enumerate(claims):
        label = claim.get("label") if isinstance(claim, dict) else None
        if label is None and isinstance(claim, dict):
            continue  # the checker failed on it: not counted, as the monitor counts
        if label not in _LABELS:
            return [], f"claim {position} has no known label ({label!r})"
        found.append((str(label), _support(claim, str(label)), str(claim.get("text", ""))))
    return found, ""


def read_checked(path: Path) -> CheckedClaims:
    """Every readable record's claims; `ValueError` when the file is not JSON at all."""
    from refcheck_callbacks.cli.batch import read_input

    read = CheckedClaims()
    _, records = read_input(path)
    for index, raw in records:
        if isinstance(raw, Exception):
            read.problems.append(f"record {index}: {raw}")
            continue
        claims, problem = _answer(raw)
        if problem:
            read.problems.append(f"record {index}: {problem}")
            continue
        checker = raw["refcheck"].get("checker")
        if isinstance(checker, str):
            read.checkers.add(checker)
        read.answers.append(claims)
    return read


def estimates(read: CheckedClaims, calibration: Calibration) -> dict[str, Any]:
    """Per rate, the figures `refcheck rates` prints."""
    from refcheck_callbacks.check.calibration.clusters import (
        cluster_ids,
        design_effect,
        flag_clusters,
    )
    from refcheck_callbacks.check.calibration.estimate import DesignEffects
    from refcheck_callbacks.check.calibration.rates import RateName
    from refcheck_callbacks.check.calibration.sweep import median_sweep

    ids = [c for cs in cluster_ids([[t for _, _, t in a] for a in read.answers]) for c in cs]
    claims = [claim for answer in read.answers for claim in answer]
    out: dict[str, Any] = {}
    for rate in RateName:
        kind = {"Neutral", "Contradiction"} if rate is RateName.HALLUCINATION else {"Contradiction"}
        flagged = [label in kind for label, _, _ in claims]
        fit = calibration.rates.get(rate)
        design = DesignEffects(
            design_effect(flag_clusters(ids, flagged)),
            fit.positive_design_effect if fit else 1.0,
            fit.negative_design_effect if fit else 1.0,
        )
        estimate = median_sweep(
            len(claims), sum(flagged), [support for _, support, _ in claims], fit, design
        )
        out[rate.value] = estimate.model_dump()
    out["calibration"] = calibration.id
    return out


def run(args: argparse.Namespace) -> int:
    """Read, estimate, print; the exit status (`cli.exit_status`)."""
    from refcheck_callbacks.check.calibration.file import load_calibration
    from refcheck_callbacks.check.calibration.rates import RateName, labels_needed
    from refcheck_callbacks.errors import CalibrationError

    if not args.input.is_file():
        return _fail(f"input file not found: {args.input}")
    try:
        calibration = load_calibration(args.calibration)
    except CalibrationError as exc:
        return _fail(str(exc))
    try:
        read = read_checked(args.input)
    except (OSError, ValueError) as exc:
        return _fail(f"cannot read {args.input}: {exc}")
    for problem in read.problems:
        print(f"refcheck: skipped {problem}", file=sys.stderr)
    if not read.answers:
        return _fail(f"no checked record could be read from {args.input}", EXIT_FAILED)
    others = sorted(read.checkers - {calibration.checker.name})
    if others:
        print(
            f"refcheck: warning: {args.input} was checked by {', '.join(others)}; the "
            f"calibration's flag rates are {calibration.checker.describe()}'s",
            file=sys.stderr,
        )
    figures = estimates(read, calibration)
    for rate in RateName:
        needed = labels_needed(calibration.rates.get(rate))
        if needed:
            print(
                f"refcheck: {rate.value} rate uncalibrated: {needed} more labels needed "
                "(label a random audit: docs/rates.md)",
                file=sys.stderr,
            )
    print(json.dumps(figures, indent=2))
    return EXIT_SKIPPED if read.problems else EXIT_OK
