"""The labelled file `monitor.feedback` appends to: RefChecker's format, as `refcheck calibrate`
reads it.

JSON Lines, one labelled answer a line:

    {"response_id": "...", "request_id": "...", "question": "..." or null, "response": "...",
     "references": [{"id": "..." or null, "text": "..."}, ...],
     "claims": ["claim text", ...],
     "labels": [one per claim: "Entailment" | "Neutral" | "Contradiction", true / false
                (supported), or null for a claim the person did not label],
     "checker": "the checker's name", "predicted": [the checker's label per claim, null where
     it failed], "answer_label": the label given to the whole answer or null,
     "labelled_at": "ISO 8601 UTC"}

The text is the checked result's, which the monitor's `redact` hook produced before anything
was checked (in every placement); an answer whose hook raised has no text and no claims, and
takes no feedback (fail closed). Writing the file is the opt-in to keep that text: nothing is
written without `RefCheckMonitor(feedback_file=...)`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from refcheck_callbacks.contract.feedback import Feedback, FeedbackLabel
from refcheck_callbacks.types import CheckResult, Label

_BOOLEAN = {FeedbackLabel.SUPPORTED: True, FeedbackLabel.UNSUPPORTED: False}


def _written(label: FeedbackLabel | Label | None) -> str | bool | None:
    """RefChecker's spelling: "Entailment"; true / false for a boolean label."""
    if label is None:
        return None
    if label in _BOOLEAN:
        return _BOOLEAN[FeedbackLabel(label)]
    return label.value.capitalize()


@dataclass(frozen=True, slots=True)
class AnswerText:
    """What a feedback record needs of a result's text (kept only when a file is written)."""

    question: str | None
    response: str
    references: tuple[tuple[str | None, str], ...]
    claims: tuple[str, ...]

    @classmethod
    def of(cls, result: CheckResult) -> AnswerText:
        request = result.request
        return cls(
            question=request.question,
            response=request.answer,
            references=tuple((ref.id, ref.text) for ref in request.references),
            claims=tuple(claim.text for claim in result.claims),
        )


Probabilities = dict[str, float]
EvidenceSpan = dict[str, int]


def _probabilities(given: dict[Label, float] | None) -> Probabilities | None:
    return None if given is None else {label.value: p for label, p in given.items()}


@dataclass(frozen=True, slots=True)
class Predictions:
    """What the checker said of each claim, as a record writes it: the label (after the
    calibration's decision points), the three probabilities, and the first evidence span."""

    labels: tuple[Label | None, ...]
    probabilities: tuple[Probabilities | None, ...]
    evidence: tuple[EvidenceSpan | None, ...]

    @classmethod
    def of(cls, result: CheckResult) -> Predictions:
        verdicts = result.verdicts
        return cls(
            labels=tuple(v.label for v in verdicts),
            probabilities=tuple(_probabilities(v.probabilities) for v in verdicts),
            evidence=tuple(
                None
                if not v.evidence
                else {
                    "reference_index": v.evidence[0].reference_index,
                    "start": v.evidence[0].span.start,
                    "end": v.evidence[0].span.end,
                }
                for v in verdicts
            ),
        )

    def fields(self) -> dict[str, object]:
        """The record's `predicted`, `probabilities` and `evidence`."""
        return {
            "predicted": [_written(label) for label in self.labels],
            "probabilities": list(self.probabilities),
            "evidence": list(self.evidence),
        }


def text_fields(text: AnswerText) -> dict[str, object]:
    """The record's question, answer, references and claims."""
    return {
        "question": text.question,
        "response": text.response,
        "references": [{"id": ref_id, "text": body} for ref_id, body in text.references],
        "claims": list(text.claims),
    }


def now_iso() -> str:
    """The time a record is written, as the files spell it."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def feedback_record(
    feedback: Feedback, text: AnswerText, predictions: Predictions, audit: bool = False
) -> dict[str, object]:
    """One line of the file (module docstring)."""
    labels: list[str | bool | None] = [None] * len(text.claims)
    for claim in feedback.claims:
        labels[claim.index] = _written(claim.label)
    record: dict[str, object] = {
        "response_id": feedback.response_id,
        "request_id": feedback.request_id,
        **text_fields(text),
        "labels": labels,
        "checker": feedback.checker,
        "predicted": predictions.fields()["predicted"],
        "answer_label": _written(feedback.answer),
        "labelled_at": now_iso(),
    }
    if audit:  # marked, and with the scores the audit file's records have
        return {"audit": True, **record, **predictions.fields()}
    return record


class FeedbackFile:
    """Appends records to one file, each whole or not at all (one writer at a time).

    A full disk (ENOSPC), a file size limit (EFBIG) or an I/O error can stop a write part way.
    A torn line would not parse, so `refcheck calibrate` would lose that verdict, and the next
    record appended onto it too. So each record goes in one `write` on an append-only
    descriptor, synced to disk; a write that fails or falls short is cut back to where the
    record began; and a record always starts on a new line, whatever another writer (or a crash
    of ours) left at the end of the file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def append(self, record: dict[str, object]) -> None:
        """OSError when the record is not whole on disk; then the file holds none of it."""
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
            try:
                append_whole(fd, line)
            finally:
                os.close(fd)


def append_whole(fd: int, line: bytes) -> None:
    """`line` appended to the append-only `fd`, synced, whole or not at all (`FeedbackFile`)."""
    start = os.fstat(fd).st_size
    if start and os.pread(fd, 1, start - 1) != b"\n":
        line = b"\n" + line  # the last line is torn: leave it on its own line
    written = 0
    try:
        written = os.write(fd, line)
        if written != len(line):
            raise OSError(errno.ENOSPC, f"wrote {written} of {len(line)} bytes")
        _sync(fd)
    except OSError:
        if written:
            # O_APPEND: the record began `written` bytes before where the write left off.
            end = os.lseek(fd, 0, os.SEEK_CUR)
            with contextlib.suppress(OSError):
                os.ftruncate(fd, end - written)
        raise


def _sync(fd: int) -> None:
    """The record's bytes on disk: some file systems (NFS, a thin volume) report a full disk
    only here."""
    getattr(os, "fdatasync", os.fsync)(fd)
