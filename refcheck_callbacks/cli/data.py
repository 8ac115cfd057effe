"""`refcheck data`: where the labelled sets live, what is there, and downloading them."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from refcheck_callbacks.bench.data_dir import DATA_DIR_ENV, data_dir, missing_files
from refcheck_callbacks.bench.sources import GITHUB_RAW, SOURCES
from refcheck_callbacks.cli.exit_status import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from refcheck_callbacks.errors import DataDownloadError, DatasetUnavailableError

_DESCRIPTION = f"""\
The labelled sets `refcheck bench` reads live in one folder: ${DATA_DIR_ENV} when set, else
refcheck/data in your cache directory (`refcheck data list` shows which).

  refcheck data list                          what is there, and each set's license
  refcheck data download                      every set, from its pinned public source
  refcheck data download --dataset wice ...   some of them

Each file is fetched from GitHub at a pinned commit and kept only if its sha256 is the pinned
one; the license (or a note on it) is saved beside the data, in SOURCE.md."""


def add_data_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "data",
        help="where the labelled sets live; download them",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(
        title="actions", metavar="ACTION", required=True, help="list or download"
    )
    listing = actions.add_parser("list", help="each set: present or missing, license, source")
    listing.set_defaults(handler=_run_list)
    fetch = actions.add_parser(
        "download", help="fetch sets from their pinned sources, checking sha256"
    )
    fetch.set_defaults(handler=_run_download)
    fetch.add_argument(
        "--dataset", action="append", metavar="NAME", choices=list(SOURCES),
        help=f"a set to fetch, repeatable (default: all of {', '.join(SOURCES)})",
    )  # fmt: skip
    for sub in (listing, fetch):
        sub.add_argument(
            "--data-dir", type=Path, default=None,
            help=f"the data folder (default: ${DATA_DIR_ENV}, else the user's cache directory)",
        )  # fmt: skip
    fetch.add_argument(
        "--base-url", default=GITHUB_RAW,
        help=f"where <repo>/<commit>/<path> is fetched from (default: {GITHUB_RAW})",
    )  # fmt: skip
    fetch.add_argument(
        "--timeout", type=float, default=60.0,
        help="seconds each file may take in all, from connecting to its last byte (default: 60)",
    )  # fmt: skip


def _run_list(args: argparse.Namespace) -> int:
    root = args.data_dir or data_dir()
    print(f"data folder: {root}")
    for name, source in SOURCES.items():
        missing = missing_files(name, root)
        state = "present" if not missing else f"missing {len(missing)}/{len(source.files)} files"
        print(f"  {name:<24} {state:<26} {source.license}  ({', '.join(source.repos)})")
    return EXIT_OK


def _run_download(args: argparse.Namespace) -> int:
    from refcheck_callbacks.bench.download import download

    if not args.timeout > 0:
        print("refcheck: error: --timeout must be more than 0 seconds", file=sys.stderr)
        return EXIT_USAGE
    try:
        with _terminate_as_interrupt():
            report = download(args.dataset, args.data_dir, args.base_url, args.timeout)
    except (DataDownloadError, DatasetUnavailableError) as exc:
        print(f"refcheck: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(
            "\nrefcheck: interrupted; the file being fetched was not kept, the files saved "
            "before it were. Rerun the same command to fetch the rest.",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    print(
        f"refcheck: {len(report.saved)} files downloaded, {len(report.kept)} already there "
        f"with the pinned sha256, in {report.root}",
        file=sys.stderr,
    )
    return EXIT_OK


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (`timeout`, `kill`, a container stopping) ends the download as Ctrl-C does, so
    the file being fetched is cleaned up instead of left as a `.part` file. Only the main
    thread can take a signal; elsewhere SIGTERM keeps its handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
