"""The `refcheck` command's exit statuses, the same for every subcommand."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
"""Bad options or input file."""
EXIT_SKIPPED = 3
"""Some records were skipped (each reported with its index and reason)."""
EXIT_INTERRUPTED = 130
