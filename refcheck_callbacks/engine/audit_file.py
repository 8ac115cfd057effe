"""The audit file: the answers the random audit drew, waiting for a person's labels.

JSON Lines in the feedback file's format (`engine.feedback_file`), one drawn answer a line:

    {"audit": true, "request_id": "...", "response_id": "..." or null,
     "question": "..." or null, "response": "...",
     "references": [{"id": "..." or null, "text": "..."}, ...],
     "claims": ["claim text", ...],
     "labels": [null, ...]  (one per claim, filled by `refcheck review`),
     "predicted": ["Entailment" | "Neutral" | "Contradiction" | null, ...],
     "probabilities": [{"entailment": p, "neutral": p, "contradiction": p} or null, ...],
     "evidence": [{"reference_index": i, "start": s, "end": e} or null, ...],
     "checker": "...", "calibration": "<Calibration.id>" or null,
     "drawn_at": "ISO 8601 UTC", "labelled_at": null}

Two programs write it: the monitor appends, and `refcheck review` rewrites it in place with the
labels (a new file moved over the old one). Each holds an exclusive `flock` on the file while it
writes, and the monitor, once it holds the lock, checks that the file it opened is still the one
at the path (the reviewer may have replaced it meanwhile), so an appended record is never lost
in the old file. The file has a size bound: a record that would take it past is not written
(`file_full`), so an audit nobody labels cannot fill the disk.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path

from refcheck_callbacks.engine.feedback_file import (
    AnswerText,
    Predictions,
    append_whole,
    text_fields,
)
from refcheck_callbacks.types import CheckResult

DEFAULT_MAX_BYTES = 64 << 20
"""The audit file's default size bound: 64 MiB, some 20,000 answers of a few kB each."""


class AuditFileFull(Exception):
    """The record would take the file past its size bound."""


def audit_record(result: CheckResult, calibration: str | None, drawn_at: str) -> dict[str, object]:
    """One line of the audit file (module docstring), for a result with claims."""
    request, text = result.request, AnswerText.of(result)
    return {
        "audit": True,
        "request_id": request.request_id,
        "response_id": request.response_id,
        **text_fields(text),
        "labels": [None] * len(text.claims),
        **Predictions.of(result).fields(),
        "checker": result.checker,
        "calibration": calibration,
        "drawn_at": drawn_at,
        "labelled_at": None,
    }


def encoded(record: dict[str, object]) -> bytes:
    """A record as its line in the file."""
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


@contextlib.contextmanager
def locked(path: Path) -> Iterator[int]:
    """A descriptor of the file now at `path` (created if missing), opened for appending and
    held under an exclusive lock: no other writer of the audit file writes meanwhile."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with contextlib.suppress(FileNotFoundError):
                if os.stat(path).st_ino == os.fstat(fd).st_ino:
                    yield fd
                    return
        finally:
            os.close(fd)  # closing releases the lock
        # Replaced (or removed) while we waited for the lock: open the file there now.


class AuditFile:
    """Appends the audit's records to `path`, each whole or not at all, within `max_bytes`."""

    def __init__(self, path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 1:
            raise ValueError("audit_max_bytes must be at least 1")
        self.path = Path(path)
        self.max_bytes = max_bytes

    def append(self, result: CheckResult, calibration: str | None, drawn_at: str) -> None:
        """AuditFileFull past the bound; OSError when the record is not whole on disk (the file
        then holds none of it)."""
        line = encoded(audit_record(result, calibration, drawn_at))
        with locked(self.path) as fd:
            if os.fstat(fd).st_size + len(line) > self.max_bytes:
                raise AuditFileFull(f"{self.path} is at its bound of {self.max_bytes} bytes")
            append_whole(fd, line)
