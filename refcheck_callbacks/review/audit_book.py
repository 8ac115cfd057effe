"""An audit file opened for labelling: its claims in order, and labels saved in place.

The file is the monitor's (`engine.audit_file`), or any labelled file of that format. A line
that cannot be reviewed (not UTF-8, not JSON, not a record with claims, parallel labels and
references) is counted with a message naming its line, and written back exactly as it was; so
is every record nobody labelled. A save writes a new file beside the old one, syncs it, and
moves it over the old one (`os.replace`): the file on disk is always the old or the new one,
whole. It does so holding the audit file's lock, and first takes in the records the monitor
appended since the file was read, so a save never loses a draw.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from refcheck_callbacks.engine.audit_file import encoded, locked
from refcheck_callbacks.engine.feedback_file import now_iso
from refcheck_callbacks.errors import RefCheckError

LABELS = ("Entailment", "Neutral", "Contradiction")
"""The labels a reviewer gives, as the file spells them."""
_KNOWN = {*LABELS, True, False, None}


class ReplacedFileError(RefCheckError):
    """The file was rewritten by someone else (another reviewer) since it was read."""


@dataclass
class Line:
    """One line of the file: its bytes, and the record when it is one that can be reviewed."""

    raw: bytes
    """As it is in the file, without its newline (a labelled record: as it will be)."""
    record: dict[str, Any] | None = None


def _problem(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(the record, None), or (None, what is wrong with the line)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {exc.start})"
    try:
        record = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        return None, f"not JSON ({exc})"
    if not isinstance(record, dict):
        return None, f"a JSON {type(record).__name__}, not a record"
    claims, labels = record.get("claims"), record.get("labels")
    if not isinstance(claims, list) or not claims or not all(isinstance(c, str) for c in claims):
        return None, "no 'claims' (a list of claim texts)"
    if not isinstance(labels, list) or len(labels) != len(claims):
        return None, "'labels' is not a list with one entry per claim"
    if any(label not in _KNOWN for label in labels if not isinstance(label, bool)):
        return None, "a label is not Entailment, Neutral, Contradiction, true, false or null"
    references = record.get("references")
    if not isinstance(references, list) or not all(_reference_text(r) for r in references):
        return None, "'references' is not a list of {\"text\": ...}"
    return record, None


def _reference_text(reference: object) -> str | None:
    if isinstance(reference, str):
        return reference
    if isinstance(reference, dict) and isinstance(reference.get("text"), str):
        return str(reference["text"])
    return None


def _lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    return lines[:-1] if lines and lines[-1] == b"" else lines


class AuditBook:
    """The file's lines and its claims, in file order (`positions`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[Line] = []
        self.problems: list[str] = []
        """One message per line that cannot be reviewed."""
        self.positions: list[tuple[int, int]] = []
        """(line index, claim index) of every claim, in file order."""
        self.answer_numbers: dict[int, int] = {}
        """Line index -> the answer's number among the records (from 1)."""
        self._read = 0
        """Bytes of the file taken in."""
        self._inode = -1

    @classmethod
    def open(cls, path: Path) -> AuditBook:
        """`OSError` when the file cannot be read."""
        book = cls(path)
        with path.open("rb") as file:
            book._inode = os.fstat(file.fileno()).st_ino
            book._take(file.read())
        return book

    def _take(self, data: bytes) -> None:
        """Add the lines of `data` (whole lines: the file's end, or what was appended)."""
        for raw in _lines(data):
            number = len(self.lines) + 1
            record, problem = (None, None) if not raw.strip() else _problem(raw)
            if problem is not None:
                self.problems.append(f"line {number}: {problem}; kept as it is")
            if record is not None:
                self.answer_numbers[len(self.lines)] = len(self.answer_numbers) + 1
                self.positions += [(len(self.lines), i) for i in range(len(record["claims"]))]
            self.lines.append(Line(raw, record))
        self._read += len(data)

    def record_at(self, position: int) -> tuple[dict[str, Any], int]:
        """The record holding claim `position`, and the claim's index in it."""
        line, claim = self.positions[position]
        record = self.lines[line].record
        assert record is not None
        return record, claim

    def label(self, position: int) -> object:
        record, claim = self.record_at(position)
        return record["labels"][claim]

    def set_label(self, position: int, label: str | None) -> None:
        """Give claim `position` a label (None: none) and save the file; where the save fails,
        the label is not given (the error is raised)."""
        entry = self.lines[self.positions[position][0]]
        record, claim = self.record_at(position)
        before = (entry.raw, record["labels"][claim], record.get("labelled_at"))
        record["labels"][claim] = label
        record["labelled_at"] = now_iso()
        entry.raw = encoded(record)[:-1]
        try:
            self.save()
        except BaseException:
            entry.raw, record["labels"][claim], record["labelled_at"] = before
            raise

    def save(self) -> None:
        """The file rewritten with the labels, atomically, under its lock (module docstring).
        `ReplacedFileError` when someone else rewrote it since it was read; OSError when it
        cannot be written (the file is then as it was)."""
        with locked(self.path) as fd:
            if os.fstat(fd).st_ino != self._inode or os.fstat(fd).st_size < self._read:
                raise ReplacedFileError(
                    f"{self.path} was rewritten by another program since it was opened; "
                    "open it again to go on (the labels given before this one are saved)"
                )
            # No writer is part way through a line: they write under this lock too.
            self._take(os.pread(fd, os.fstat(fd).st_size - self._read, self._read))
            self._inode, self._read = self._replace()

    def _replace(self) -> tuple[int, int]:
        """Write every line to a new file, sync it, move it over the old one; its inode and
        size."""
        folder = self.path.parent
        fd, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(b"".join(line.raw + b"\n" for line in self.lines))
                out.flush()
                os.fsync(out.fileno())
                written = os.fstat(out.fileno())
            with contextlib.suppress(OSError):
                os.chmod(temporary, self.path.stat().st_mode & 0o777)
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        _sync_folder(folder)
        return written.st_ino, written.st_size

    def labelled(self) -> int:
        return sum(self.label(p) is not None for p in range(len(self.positions)))


def _sync_folder(folder: Path) -> None:
    """The rename itself on disk."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
