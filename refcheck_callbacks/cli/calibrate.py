"""`refcheck calibrate`: fit the checker's decision points on an app's own labelled answers.

Reads labelled records (`bench.labelled_records`: RefChecker's format with a parallel
`labels` list, what `monitor.feedback` appends), checks every labelled claim once with the
checker and conflict stage the app runs, fits the decision points (`bench.calibration_fit`),
prints the cross-validated confusion before and after, and writes the calibration file that
`RefCheckMonitor(calibration=...)` and `refcheck check --calibration` apply. Labels of audit
records (`"audit": true`, the monitor's random draw) also fit the flag rates that `refcheck
rates` and the dashboard adjust the raw rates by (`bench.rate_fit`, docs/rates.md).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from refcheck_callbacks.cli.exit_status import EXIT_FAILED, EXIT_OK, EXIT_SKIPPED
from refcheck_callbacks.cli.exit_status import fail as _fail

if TYPE_CHECKING:
    from collections.abc import Sequence

    from refcheck_callbacks.bench.labelled_records import LabelledRecords
    from refcheck_callbacks.check.calibration.file import Calibration, Figures
    from refcheck_callbacks.types import Verdict

SUMMARY = "fit the checker's decision points on your own labelled answers"


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "calibrate",
        help=SUMMARY,
        description=f"{SUMMARY}.\n\nInput: JSON Lines or a JSON list of RefChecker-format "
        'records with a parallel "labels" list:\n  {"response_id"?, "question"?, "response"?, '
        '"references": [{"id", "text"}] or ["text"] (or "reference" / "context"),\n   '
        '"claims": ["text" or [head, relation, tail]], "labels": ["Entailment" | "Neutral" | '
        '"Contradiction" | true | false | null]}\nA bad record is reported with its line and '
        "skipped (exit status 3).\n\nFitted: the support threshold, the minimum P(contradiction) "
        "and the conflict kinds that count as\nContradiction, for the best balanced accuracy "
        "with at most --max-false-contradiction of the\nsupported claims labelled Contradiction. "
        "Apply the output with RefCheckMonitor(calibration=FILE)\nor `refcheck check "
        "--calibration FILE`; it is refused by any other checker.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=run)
    parser.add_argument("--input", type=Path, required=True, help="the labelled records")
    parser.add_argument(
        "--output", type=Path, required=True, help="the calibration file to write (JSON)"
    )
    parser.add_argument(
        "--checker", default="embedded", metavar="SPEC",
        help="the checker the app runs, as for `refcheck check` (default: embedded)",
    )  # fmt: skip
    parser.add_argument(
        "--checker-api-base", "--checker_api_base", dest="checker_api_base", metavar="URL",
        help="the OpenAI-compatible endpoint of an llm:MODEL checker",
    )  # fmt: skip
    parser.add_argument(
        "--conflict", default="embedded", metavar="SPEC",
        help="the conflict stage the app runs: embedded (default), nli:MODEL, none",
    )  # fmt: skip
    parser.add_argument(
        "--max-false-contradiction", type=float, default=None, metavar="RATE",
        help="the largest share of supported claims that may be labelled Contradiction "
        "(default: 0.01)",
    )  # fmt: skip
    parser.add_argument(
        "--folds", type=int, default=5, help="cross-validation folds, by response (default: 5)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the folds (default: 0)")
    parser.add_argument(
        "--audit-window", type=int, default=None, metavar="N",
        help="fit the flag rates of `refcheck rates` on the N latest labelled claims of audit "
        "records (\"audit\": true, by labelled_at / drawn_at; default: 1000)",
    )  # fmt: skip
    parser.add_argument(
        "--batch-size", type=int, default=64, help="claims per checker call (default: 64)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def run(args: argparse.Namespace) -> int:
    """Read, check, fit, print and write; the exit status (`cli.exit_status`)."""
    from refcheck_callbacks.bench.calibration_fit import DEFAULT_MAX_FALSE_CONTRADICTION

    target = args.max_false_contradiction
    target = DEFAULT_MAX_FALSE_CONTRADICTION if target is None else target
    if not 0.0 <= target <= 1.0:
        return _fail("--max-false-contradiction is a share between 0 and 1")
    if args.folds < 2 or args.batch_size < 1:
        return _fail("--folds must be at least 2 and --batch-size at least 1")
    if args.audit_window is not None and args.audit_window < 1:
        return _fail("--audit-window must be at least 1")
    if not args.input.is_file():
        return _fail(f"input file not found: {args.input}")
    return _calibrate(args, target)


def _calibrate(args: argparse.Namespace, target: float) -> int:
    from refcheck_callbacks.bench import calibration_fit
    from refcheck_callbacks.bench.labelled_records import read_labelled_records
    from refcheck_callbacks.bench.runner import check_examples
    from refcheck_callbacks.check.calibration.file import (
        DataSize,
        identity_of,
        write_calibration,
    )
    from refcheck_callbacks.check.calibration.points import defaults_of
    from refcheck_callbacks.contract.registry import build_checker, conflict_finder
    from refcheck_callbacks.errors import ComponentSpecError
    from refcheck_callbacks.support.progress import Progress

    try:
        read = read_labelled_records(args.input)
    except OSError as exc:
        return _fail(f"cannot read {args.input}: {exc}")
    for problem in read.problems:
        print(f"refcheck: skipped {problem}", file=sys.stderr)
    if not read.examples:
        return _fail(f"no labelled claim could be read from {args.input}", EXIT_FAILED)
    try:
        checker = build_checker(args.checker, args.checker_api_base)
        finder = conflict_finder(args.conflict)
    except ComponentSpecError as exc:
        return _fail(str(exc))
    progress = Progress(len(read.examples), "checking", enabled=not args.no_progress)
    verdicts = asyncio.run(
        check_examples(checker, read.examples, args.batch_size, progress, finder)
    )
    progress.close()
    rows = calibration_fit.scored(read.examples, verdicts)
    data = DataSize(
        records=read.records,
        skipped_records=len(read.problems),
        responses=len({row.group for row in rows}),
        claims=len(rows),
        supported=sum(row.supported for row in rows),
        unsupported=sum(not row.supported for row in rows),
        failed_claims=len(read.examples) - len(rows),
    )
    try:
        fitted = calibration_fit.calibration(
            rows,
            identity_of(checker, finder, args.checker),
            defaults_of(checker),
            data,
            target,
            args.folds,
            args.seed,
        )
    except ValueError as exc:
        return _fail(str(exc), EXIT_FAILED)
    fitted = _with_rates(fitted, read, verdicts, args.audit_window)
    try:
        write_calibration(fitted, args.output)
    except OSError as exc:
        return _fail(f"cannot write {args.output}: {exc}", EXIT_FAILED)
    print(report(fitted))
    print(f"refcheck: wrote {args.output}", file=sys.stderr)
    return EXIT_SKIPPED if read.problems else EXIT_OK


def _with_rates(
    fitted: Calibration,
    read: LabelledRecords,
    verdicts: Sequence[Verdict | None],
    window: int | None,
) -> Calibration:
    """The calibration with its flag rates on the latest audit labels, at the fitted points."""
    from refcheck_callbacks.bench.rate_fit import DEFAULT_AUDIT_WINDOW, fit_rates
    from refcheck_callbacks.check.calibration.points import relabel

    own = fitted.defaults.support_threshold
    relabelled = [None if v is None else relabel(v, fitted.points, own) for v in verdicts]
    rates = fit_rates(read.examples, relabelled, read.audited, window or DEFAULT_AUDIT_WINDOW)
    return fitted.model_copy(update={"rates": rates})


def _rates_report(fitted: Calibration) -> list[str]:
    from refcheck_callbacks.check.calibration.rates import labels_needed

    if not fitted.rates:
        return [
            'flag rates: uncalibrated (no labelled claim of an audit record, "audit": '
            f"true); `refcheck rates` needs at least {labels_needed(None)} audit labels"
        ]
    lines = [f"  {'flag rates (audit labels)':<28}{'labels':>8}{'TPR':>8}{'FPR':>8}"]
    for rate, fit in fitted.rates.items():
        lines.append(
            f"  {rate.value:<28}{fit.labels:>8}{_rate(fit.true_positive_rate):>8}"
            f"{_rate(fit.false_positive_rate):>8}"
        )
    return lines


def _kinds(kinds: tuple[object, ...]) -> str:
    names = [getattr(kind, "value", str(kind)) for kind in kinds]
    return ", ".join(names) if names else "none"


def _kept(flag: bool) -> str:
    return "kept" if flag else "dropped"


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _confusion(name: str, figures: Figures) -> list[str]:
    lines = [f"  {name:<8} gold \\ label   Entailment  Neutral  Contradiction"]
    for gold, counts in (("supported", figures.supported), ("unsupported", figures.unsupported)):
        lines.append(
            f"  {'':<8} {gold:<13} {counts.entailment:>10}  {counts.neutral:>7}  "
            f"{counts.contradiction:>13}"
        )
    return lines


def report(fitted: Calibration) -> str:
    """What the fit found, for a person: the points, and the figures before and after."""
    data, points, defaults = fitted.data, fitted.points, fitted.defaults
    lines = [
        f"refcheck: {data.claims} labelled claims ({data.supported} supported) from "
        f"{data.responses} responses; {fitted.checker.describe()}",
        f"  {'decision point':<28}{'default':>10}{'fitted':>10}",
        f"  {'support threshold':<28}{defaults.support_threshold:>10.3f}"
        f"{points.support_threshold:>10.3f}",
        f"  {'min P(contradiction)':<28}{defaults.min_contradiction:>10.3f}"
        f"{points.min_contradiction:>10.3f}",
        f"  {'vetoes above the threshold':<28}{_kept(defaults.keep_vetoes):>10}"
        f"{_kept(points.keep_vetoes):>10}",
        f"  conflict kinds counted: {_kinds(points.conflict_kinds)} "
        f"(default: {_kinds(defaults.conflict_kinds)})",
    ]
    lines += _rates_report(fitted)
    checked = fitted.cross_validated
    if checked is None:
        lines.append("  too few responses to cross-validate: no held-out figures")
        return "\n".join(lines)
    lines.append(
        f"cross-validated, {checked.folds} folds by response (target: false-contradiction "
        f"rate at most {fitted.max_false_contradiction:.3f})"
    )
    lines.append(f"  {'':<28}{'before':>10}{'after':>10}")
    for name, before, after in (
        ("balanced accuracy", checked.before.balanced_accuracy, checked.after.balanced_accuracy),
        (
            "false-contradiction rate",
            checked.before.false_contradiction_rate,
            checked.after.false_contradiction_rate,
        ),
        ("AUROC (unchanged by design)", checked.before.auroc, checked.after.auroc),
    ):
        lines.append(f"  {name:<28}{_rate(before):>10}{_rate(after):>10}")
    return "\n".join(
        lines + _confusion("before", checked.before) + _confusion("after", checked.after)
    )
