"""The `refcheck` command: check RefChecker-format files, benchmark checkers, write alert rules,
run the demo.

Each subcommand parses its options here and hands the work to the module that owns it:
`batch` (extract / check / extract-check), `bench.runner` (bench; `cli.fit_cascade` for
`bench --fit-cascade`), `cli.alert_rules` (alert-rules, which also parses its own options),
`cli.calibrate` (calibrate), `cli.review` (review), `cli.data` (data), the packaged quickstart
`demo.quickstart` (demo).
Heavy imports happen inside the subcommand, so `refcheck --help` is instant.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from refcheck_callbacks.bench.datasets import DATASET_NAMES
from refcheck_callbacks.check.relevance.selection import relevance_judge
from refcheck_callbacks.cli import alert_rules, calibrate, fit_cascade, rates, review
from refcheck_callbacks.cli.collect import add_collect_command
from refcheck_callbacks.cli.component_names import (
    REFCHECKER_NLI_MODEL,
    describe,
    from_refchecker_name,
)
from refcheck_callbacks.cli.data import add_data_command
from refcheck_callbacks.cli.exit_status import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SKIPPED,
)
from refcheck_callbacks.cli.exit_status import fail as _fail
from refcheck_callbacks.cli.refchecker_format import Mode
from refcheck_callbacks.cli.serve import add_serve_command
from refcheck_callbacks.contract.registry import (
    CHECKERS,
    EXTRACTORS,
    build_checker,
    build_extractor,
    conflict_finder,
)
from refcheck_callbacks.engine.aggregate import Aggregator
from refcheck_callbacks.errors import (
    CalibrationError,
    ComponentSpecError,
    ConfigurationError,
    MissingExtraError,
)

if TYPE_CHECKING:
    from refcheck_callbacks.check.calibration.file import Calibration

_RAW = argparse.RawDescriptionHelpFormatter

_MAIN_HELP = """\
Claim-level hallucination checks of answers against their references.

  refcheck extract-check --input in.json --output out.json
  refcheck check --input claims.jsonl --output checked.jsonl --checker nli:MODEL
  refcheck bench --dataset all --checker embedded --output-dir bench-out
  refcheck calibrate --input labelled.jsonl --output calibration.json
  refcheck review audit.jsonl
  refcheck alert-rules --set share_test.z=4 --output refcheck-alerts.yml
  refcheck serve --checker nli:MODEL --num-gpus 1
  refcheck collect --port 4318 --export-endpoint http://otel-collector:4318
  refcheck data download
  refcheck demo

Run `refcheck COMMAND --help` for a command's options.
"""

_FILE_HELP = """\
Input: RefChecker's format, a JSON list (or JSON Lines, one record per line) of
  {"response": "...", "question": "... (optional)",
   "reference": "text" or ["passage", ...], "claims": ["text" or [head, relation, tail], ...]}
`check` needs `claims`; `extract-check` extracts them (given ones are ignored, as in RefChecker).

Output: every input field, plus RefChecker's
  claims  the claims (a triplet as [head, relation, tail], else the claim text)
  ys      one label per claim: Entailment | Neutral | Contradiction (null if the checker failed)
  Y       the response: a label (strict, major) or the share of each label and Abstain (soft)
and a `refcheck` object: index, outcome, extractor, checker, and per claim its label,
confidence, probabilities and evidence (reference index, character span, text).

The output is JSON Lines when its name ends in .jsonl / .ndjson, else a JSON list. Records are
written as they finish (a JSON output via OUTPUT.partial.jsonl), so after an interruption
`--resume` continues where the run stopped. A record that cannot be read or checked is
reported on stderr with its index and left out; rerunning with --resume retries it.

Exit status: 0 every record written, 3 some records skipped, 2 bad options or input file,
130 interrupted (finished records are kept).
"""


def _add_file_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], mode: Mode, summary: str
) -> None:
    specs = ""
    if mode is not Mode.CHECK:
        specs += f"\nExtractor specs:\n{describe(EXTRACTORS)}\n"
    if mode.checks:
        specs += f"\nChecker specs:\n{describe(CHECKERS)}\n"
    parser = commands.add_parser(
        mode.value,
        help=summary,
        description=f"{summary}\n\n{_FILE_HELP}",
        epilog=specs,
        formatter_class=_RAW,
    )
    parser.set_defaults(handler=_run_file_command, mode=mode)
    parser.add_argument(
        "--input", "--input_path", dest="input", type=Path, required=True,
        help="the RefChecker-format input file (.json list or .jsonl)",
    )  # fmt: skip
    parser.add_argument(
        "--output", "--output_path", dest="output", type=Path, required=True,
        help="where results go (.jsonl / .ndjson: JSON Lines; anything else: a JSON list)",
    )  # fmt: skip
    if mode is not Mode.CHECK:
        parser.add_argument(
            "--extractor", default="sentence", metavar="SPEC",
            help="how claims are extracted (default: sentence; specs listed below)",
        )  # fmt: skip
        _add_refchecker_model_options(parser, "extractor")
    if mode.checks:
        parser.add_argument(
            "--checker", default="embedded", metavar="SPEC",
            help="how claims are checked (default: embedded; specs listed below)",
        )  # fmt: skip
        _add_refchecker_model_options(parser, "checker")
        parser.add_argument(
            "--aggregator", "--aggregator_name", dest="aggregator", default="soft",
            choices=[a.value for a in Aggregator],
            help="how `Y` sums up a response (default: soft, as RefChecker): strict = any "
            "Contradiction, else any Neutral, else Entailment; soft = share of each label; "
            "major = the most frequent label",
        )  # fmt: skip
        parser.add_argument(
            "--relevance", default="embedded", metavar="SPEC",
            help="how diagnostics score each reference's, claim's and the answer's relevance "
            "to the question: embedded (default, the offline head) or llm:MODEL (one LLM call "
            "per record; what it cannot grade falls back to the head, counted)",
        )  # fmt: skip
        parser.add_argument(
            "--relevance-api-base", "--relevance_api_base", dest="relevance_api_base",
            metavar="URL", help="the OpenAI-compatible endpoint (e.g. vLLM) of an llm:MODEL "
            "relevance",
        )  # fmt: skip
        parser.add_argument(
            "--calibration", type=Path, default=None, metavar="FILE",
            help="decision points fitted by `refcheck calibrate` for this checker (refused "
            "if fitted for another)",
        )  # fmt: skip
    parser.add_argument(
        "--batch-size", type=int, default=16,
        help="records per pipeline call; each batch is written before the next starts "
        "(default: 16)",
    )  # fmt: skip
    parser.add_argument(
        "--concurrency", type=int, default=1,
        help="batches in flight at once; raise it for LLM extractors and judges, which wait "
        "on the network (default: 1)",
    )  # fmt: skip
    parser.add_argument(
        "--resume", action="store_true",
        help="keep the records an earlier run of this command already wrote and do the rest",
    )  # fmt: skip
    parser.add_argument(
        "--stage-timeout", type=float, default=600.0,
        help="seconds one batch may spend extracting, and again checking (default: 600)",
    )  # fmt: skip
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def _add_refchecker_model_options(parser: argparse.ArgumentParser, role: str) -> None:
    """RefChecker's `--ROLE_name` and `--ROLE_api_base`, so its scripts run unchanged."""
    parser.add_argument(
        f"--{role}_name", metavar="NAME",
        help=f"as in refchecker-cli: a litellm model name (= --{role} llm:NAME)"
        + (f", or `nli` (= --checker nli:{REFCHECKER_NLI_MODEL})" if role == "checker" else ""),
    )  # fmt: skip
    parser.add_argument(
        f"--{role}-api-base", f"--{role}_api_base", dest=f"{role}_api_base", metavar="URL",
        help=f"the OpenAI-compatible endpoint (e.g. vLLM) serving an llm:MODEL {role}",
    )  # fmt: skip


def _spec(args: argparse.Namespace, role: str) -> str:
    name: str | None = getattr(args, f"{role}_name")
    return from_refchecker_name(name) if name else str(getattr(args, role))


def _add_bench_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    summary = "measure checkers on labelled datasets; writes a JSON result and an HTML report"
    parser = commands.add_parser(
        "bench",
        help=summary,
        description=f"{summary}.\n\n"
        "Each checker labels every claim of each dataset against its references. Reported: "
        "accuracy,\nmacro-F1 and per-label precision / recall / F1 (3-way sets), balanced "
        "accuracy and AUROC of\nthe support score P(Entailment) (binary view of every set), "
        "Pearson / Spearman of the\nresponse-level hallucination rate (sets whose responses "
        "have several claims), confusion\nmatrices, speed. The HTML report is self-contained "
        "(inline SVG) and opens offline.",
        epilog=f"Checker specs:\n{describe(CHECKERS)}",
        formatter_class=_RAW,
    )
    parser.set_defaults(handler=_run_bench)
    parser.add_argument(
        "--dataset", action="append", required=True, metavar="NAME",
        help=f"a dataset to load, repeatable: a name ({', '.join(DATASET_NAMES)}), `all` "
        "for every one that loads, file:PATH for your own labelled claims (JSON Lines or "
        'a JSON list of {"claim", "references", "label" and/or "supported", "response_id"?}), '
        "or planted:NAME / planted:all for a set's supported claims with one stated figure, "
        "date or name changed, beside the unchanged originals (planted-any: also edits facts "
        "stated only in unrelated sentences), or relevance for the relevance bench (the "
        "relevance head beside the static cosine on WikiQA / TREC QA / ExpertQA, and the "
        "cause probes; prints its tables; docs/bench.md)",
    )  # fmt: skip
    parser.add_argument(
        "--path", type=Path, default=None,
        help="the data folder (default: $REFCHECK_DATA_DIR, else the user's cache directory; "
        "see `refcheck data`)",
    )  # fmt: skip
    parser.add_argument(
        "--checker", action="append", metavar="SPEC",
        help="a checker to measure, repeatable (default: embedded; specs listed below)",
    )  # fmt: skip
    parser.add_argument(
        "--limit", type=int, default=None,
        help="at most this many examples per dataset (a deterministic subset); for the "
        "relevance bench, questions per split and items per probe (default there: 250)",
    )  # fmt: skip
    parser.add_argument(
        "--output-dir", type=Path, default=Path("bench-results"),
        help="where bench.json, bench.html, bench.md (the summary table) and "
        "predictions.jsonl (each example's gold and predicted label) go (default: ./bench-results)",
    )  # fmt: skip
    parser.add_argument(
        "--batch-size", type=int, default=64, help="claims per checker call (default: 64)"
    )
    parser.add_argument(
        "--checker-api-base", "--checker_api_base", dest="checker_api_base", metavar="URL",
        help="the OpenAI-compatible endpoint (e.g. vLLM) of llm:MODEL checkers and stages",
    )  # fmt: skip
    parser.add_argument(
        "--conflict", default="embedded", metavar="SPEC",
        help="the conflict stage every checker's verdicts go through (a Contradiction needs a "
        "conflicting statement): embedded (default, offline), nli:MODEL (a 3-way NLI model), "
        "none (the checkers' own labels)",
    )  # fmt: skip
    fit_cascade.add_options(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="refcheck", description=_MAIN_HELP, formatter_class=_RAW)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    _add_file_command(commands, Mode.EXTRACT, "extract claims from each record's response")
    _add_file_command(commands, Mode.CHECK, "check each record's given claims")
    _add_file_command(
        commands, Mode.EXTRACT_CHECK, "extract claims from each response and check them"
    )
    _add_bench_command(commands)
    alert_rules.add_command(commands)
    calibrate.add_command(commands)
    review.add_command(commands)
    rates.add_command(commands)
    add_serve_command(commands)
    add_collect_command(commands)
    add_data_command(commands)
    demo = commands.add_parser(
        "demo",
        help="run the quickstart example (offline)",
        description="A few RAG answers checked offline, verdicts printed as a table (the "
        "quickstart shipped in the package: refcheck_callbacks/demo).",
    )
    demo.set_defaults(handler=_run_demo)
    return parser


def _run_file_command(args: argparse.Namespace) -> int:
    from refcheck_callbacks.cli.batch import BatchOptions, BatchRun

    if not args.input.is_file():
        return _fail(f"input file not found: {args.input}")
    if args.batch_size < 1 or args.concurrency < 1:
        return _fail("--batch-size and --concurrency must be at least 1")
    mode: Mode = args.mode
    try:
        extractor = (
            build_extractor(_spec(args, "extractor"), args.extractor_api_base)
            if mode is not Mode.CHECK
            else build_extractor("sentence")
        )
        checker = (
            build_checker(_spec(args, "checker"), args.checker_api_base) if mode.checks else None
        )
        relevance = (
            relevance_judge(args.relevance, args.relevance_api_base) if mode.checks else None
        )
    except (ComponentSpecError, ConfigurationError) as exc:
        return _fail(str(exc))
    try:
        calibration = _calibration(args)
    except CalibrationError as exc:
        return _fail(str(exc))
    options = BatchOptions(
        mode=mode,
        input=args.input,
        output=args.output,
        aggregator=Aggregator(getattr(args, "aggregator", "soft")),
        batch_size=args.batch_size,
        resume=args.resume,
        progress=not args.no_progress,
        stage_timeout=args.stage_timeout,
        concurrency=args.concurrency,
        calibration=calibration,
        relevance=relevance,
    )
    try:
        run = BatchRun(options, extractor, checker)
    except CalibrationError as exc:
        return _fail(str(exc))
    try:
        summary = run.run()
    except KeyboardInterrupt:
        done = run.summary.already_done + run.summary.written
        print(
            f"\nrefcheck: interrupted; {done} records are in {args.output} or its partial "
            "file. Rerun the same command with --resume to continue.",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    except (OSError, ValueError) as exc:
        return _fail(str(exc))
    skipped = sorted(index for index, _ in summary.skipped)
    print(
        f"refcheck: {summary.written} records written to {args.output}"
        + (f" ({summary.already_done} kept from the earlier run)" if summary.already_done else "")
        + (f"; {len(skipped)} skipped: records {_indexes(skipped)}" if skipped else ""),
        file=sys.stderr,
    )
    return EXIT_SKIPPED if skipped else EXIT_OK


def _calibration(args: argparse.Namespace) -> Calibration | None:
    """The `--calibration` file, read (`CalibrationError` says what is wrong); the pipeline
    refuses it if it was fitted for another checker."""
    path = getattr(args, "calibration", None)
    if path is None:
        return None
    from refcheck_callbacks.check.calibration.file import load_calibration

    return load_calibration(path)


def _indexes(indexes: Sequence[int], shown: int = 20) -> str:
    text = ", ".join(str(i) for i in indexes[:shown])
    return text + (f" and {len(indexes) - shown} more" if len(indexes) > shown else "")


def _run_bench(args: argparse.Namespace) -> int:
    from refcheck_callbacks.bench.runner import BenchOptions, run_bench

    if (args.limit is not None and args.limit < 1) or args.batch_size < 1:
        return _fail("--limit and --batch-size must be at least 1")
    options = BenchOptions(
        datasets=args.dataset,
        path=args.path,
        limit=args.limit,
        output_dir=args.output_dir,
        batch_size=args.batch_size,
        progress=not args.no_progress,
        conflict=args.conflict,
    )
    if args.fit_cascade:
        return fit_cascade.run(args, options, _fail)
    if args.target_escalation is not None or args.target_balanced_accuracy is not None:
        return _fail("--target-escalation and --target-balanced-accuracy go with --fit-cascade")
    specs = args.checker or ["embedded"]
    try:
        checkers = {spec: build_checker(spec, args.checker_api_base) for spec in specs}
        options.conflict = conflict_finder(args.conflict)
    except ComponentSpecError as exc:
        return _fail(str(exc))
    try:
        outcome = run_bench(options, checkers)
    except (OSError, ValueError) as exc:
        return _fail(str(exc))
    relevance = outcome.report.relevance
    if not outcome.results and relevance is None:
        return _fail("no dataset could be loaded; see the messages above", EXIT_FAILED)
    if relevance is not None:
        from refcheck_callbacks.bench.relevance_report import relevance_markdown

        print("\n".join(relevance_markdown(relevance)))
    print(
        f"refcheck: wrote {outcome.json_path}, {outcome.html_path}, bench.md and predictions.jsonl",
        file=sys.stderr,
    )
    return EXIT_OK


def _run_demo(args: argparse.Namespace) -> int:
    from refcheck_callbacks.demo.quickstart import main as run_quickstart

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    run_quickstart()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        status: int = args.handler(args)
    except MissingExtraError as exc:  # a component this command needs is not installed
        return _fail(str(exc))
    return status


if __name__ == "__main__":
    sys.exit(main())
