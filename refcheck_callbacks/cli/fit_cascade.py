"""`refcheck bench --fit-cascade SPEC`: the thresholds of a cascade, fitted on labelled sets.

The options join `refcheck bench`'s; the work is `bench.cascade_fit`. The result is printed as
the cascade spec with its thresholds written in, ready for `--checker`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from refcheck_callbacks.cli.exit_status import EXIT_FAILED, EXIT_OK
from refcheck_callbacks.contract.registry import build_checker
from refcheck_callbacks.errors import ComponentSpecError

if TYPE_CHECKING:
    from refcheck_callbacks.bench.runner import BenchOptions

Failure = Callable[..., int]
"""Prints an error and returns the exit status (`main._fail`)."""


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fit-cascade", metavar="SPEC",
        help="instead of scoring checkers, fit the thresholds of a cascade spec "
        "(cascade:A>B>C) on the datasets: every stage labels every claim once, then the "
        "thresholds that meet the target are searched; writes cascade_fit.json and prints "
        "the spec with its thresholds",
    )  # fmt: skip
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--target-escalation", type=float, metavar="SHARE",
        help="with --fit-cascade: the best balanced accuracy with at most this share of "
        "claims reaching the last stage (default: 0.3)",
    )  # fmt: skip
    target.add_argument(
        "--target-balanced-accuracy", type=float, metavar="BA",
        help="with --fit-cascade: the fewest claims escalated that reach this balanced accuracy",
    )  # fmt: skip


def run(args: argparse.Namespace, options: BenchOptions, fail: Failure) -> int:
    """`refcheck bench --fit-cascade SPEC`: fit, print the fitted spec, return the status."""
    from refcheck_callbacks.bench.cascade_fit import run_cascade_fit
    from refcheck_callbacks.check.cascade import CascadeChecker

    spec = str(args.fit_cascade).strip()
    share, accuracy = args.target_escalation, args.target_balanced_accuracy
    if share is None and accuracy is None:
        share = 0.3
    if (share is not None and not 0 <= share <= 1) or (
        accuracy is not None and not 0 <= accuracy <= 1
    ):
        return fail("targets are shares between 0 and 1")
    if args.checker:
        return fail("--fit-cascade takes its checkers from the cascade spec, not --checker")
    try:
        cascade = build_checker(spec, args.checker_api_base)
    except ComponentSpecError as exc:
        return fail(str(exc))
    if not isinstance(cascade, CascadeChecker):
        return fail(f"--fit-cascade needs a cascade:A>B spec, got {spec!r}")
    try:
        report, path = run_cascade_fit(
            options, spec, cascade, target_escalation=share, target_balanced_accuracy=accuracy
        )
    except (OSError, ValueError) as exc:
        return fail(str(exc), EXIT_FAILED)
    fit = report.fit
    alone = ", ".join(f"{name} {ba:.3f}" for name, ba in fit.stage_alone.items())
    print(f"refcheck: {fit.claims} claims; each stage alone: balanced accuracy {alone}")
    if fit.chosen is None:
        best = max(fit.frontier, key=lambda p: p.balanced_accuracy)
        print(
            f"refcheck: no thresholds meet the target ({fit.target}); the best is balanced "
            f"accuracy {best.balanced_accuracy:.3f} with {best.escalated:.1%} escalated. "
            f"The trade-off curve is in {path}"
        )
        return EXIT_FAILED
    print(
        f"refcheck: {report.fitted_spec}\n  balanced accuracy {fit.chosen.balanced_accuracy:.3f}"
        f" with {fit.chosen.escalated:.1%} of claims reaching {fit.stages[-1]} ({fit.target});"
        f" details in {path}"
    )
    return EXIT_OK
