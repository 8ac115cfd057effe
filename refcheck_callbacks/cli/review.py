"""`refcheck review FILE`: a person labels the answers the random audit drew.

Opens the audit file (`review.audit_book`), says which lines it cannot review, and hands the
labelling to the terminal labeller (`review.terminal`), or with `--web` to a page on the
loopback address (`review.web`). Labels are saved in the file as they
are given.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from refcheck_callbacks.cli.exit_status import EXIT_OK
from refcheck_callbacks.cli.exit_status import fail as _fail

SUMMARY = "label the answers the random audit drew in the terminal"
SHOWN_PROBLEMS = 5

_DESCRIPTION = f"""\
{SUMMARY}.

Each claim of the audit file (RefCheckMonitor(audit_file=...)) is shown with its question,
the checker's label, the evidence span highlighted in its reference, the references and the
answer. Keys:
  e or 1  Entailment: a reference supports the claim
  n or 2  Neutral: nothing supports it, nothing conflicts with it
  c or 3  Contradiction: a reference states something that conflicts with it
  s       skip (leave it unlabelled)     b  back to the previous claim
  q       quit (every label is already saved)
  Up/Down, PgUp/PgDn, j/k: scroll a long claim
Each label is written into the file at once (a new file moved over the old one), so a review
can stop at any time; the next one starts at the first claim without a label. Lines that
cannot be reviewed are counted and kept as they are.
"""


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "review",
        help=SUMMARY,
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=run)
    parser.add_argument("file", type=Path, help="the audit file (JSON Lines)")
    parser.add_argument(
        "--web", action="store_true",
        help="label in a browser instead: a page on 127.0.0.1 (its address is printed)",
    )  # fmt: skip
    parser.add_argument(
        "--port", type=int, default=0,
        help="the page's port with --web (default: 0, any free one; the one taken is printed)",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from refcheck_callbacks.review.audit_book import AuditBook
    from refcheck_callbacks.review.session import ReviewSession

    path: Path = args.file
    if not path.is_file():
        return _fail(f"no audit file at {path}")
    try:
        book = AuditBook.open(path)
    except OSError as exc:
        return _fail(f"cannot read {path}: {exc}")
    status = _report_problems(book.problems)
    if not book.positions:
        print(f"refcheck: {path} has no claims to label", file=sys.stderr)
        return EXIT_OK
    session = ReviewSession(book)
    if args.web:
        from refcheck_callbacks.review.web import serve

        return serve(session, args.port)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return _fail(
            "refcheck review needs a terminal: run it in one, its input and output not redirected"
        )
    from refcheck_callbacks.review.terminal import review_in_terminal

    review_in_terminal(session, status)
    print(
        f"refcheck: {book.labelled()} of {session.total} claims labelled in {path}",
        file=sys.stderr,
    )
    return EXIT_OK


def _report_problems(problems: list[str]) -> str:
    """Say on stderr which lines cannot be reviewed; the status line that says it on screen."""
    if not problems:
        return ""
    for problem in problems[:SHOWN_PROBLEMS]:
        print(f"refcheck: {problem}", file=sys.stderr)
    if len(problems) > SHOWN_PROBLEMS:
        print(f"refcheck: and {len(problems) - SHOWN_PROBLEMS} more lines", file=sys.stderr)
    return f"{len(problems)} lines cannot be reviewed and are kept as they are (first: " + (
        problems[0] + ")"
    )
