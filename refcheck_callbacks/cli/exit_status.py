"""The `refcheck` command's exit statuses, the same for every subcommand."""

from __future__ import annotations

import sys

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
"""Bad options or input file."""
EXIT_SKIPPED = 3
"""Some records were skipped (each reported with its index and reason)."""
EXIT_INTERRUPTED = 130


def fail(message: str, status: int = EXIT_USAGE) -> int:
    """Say what went wrong on stderr, as every subcommand does; the exit status to return."""
    print(f"refcheck: error: {message}", file=sys.stderr)
    return status
