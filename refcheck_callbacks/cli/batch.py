"""Checking RefChecker-format files: streamed, batched, resumable.

Records go through the same `Pipeline` the monitor uses, a batch at a time. Finished records
are appended to a JSON Lines working file and flushed after every batch, so an interrupted run
loses at most the batch in flight; `resume` skips the indexes already there. A JSON output is
assembled from the working file at the end; a `.jsonl` output is the working file itself.
A record that cannot be read or checked is reported with its index and left out. JSON is
written ASCII-escaped, as RefChecker's `json.dump` writes it: valid whatever the text holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from refcheck_callbacks.check.calibration.file import Calibration
from refcheck_callbacks.check.relevance.judged import RelevanceJudge
from refcheck_callbacks.cli.refchecker_format import (
    FILE_LIMITS,
    OUR_FIELD,
    BadRecordError,
    Mode,
    RefCheckerRecord,
    checked_record,
    extracted_record,
    input_hash,
    read_record,
    to_request,
)
from refcheck_callbacks.contract.components import Checker, Extractor
from refcheck_callbacks.engine.aggregate import Aggregator
from refcheck_callbacks.engine.pipeline import Pipeline, StageTimeouts
from refcheck_callbacks.support.progress import Progress
from refcheck_callbacks.types import Outcome

JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")
_RAW_BYTE = re.compile("[\udc80-\udcff]")
"""A byte that was not UTF-8, as `surrogateescape` keeps it."""
# Outcomes that still make a RefChecker record; the others (errors, timeouts) are left out so
# that `--resume` tries them again.
_WRITTEN = (Outcome.CHECKED, Outcome.PARTIAL, Outcome.ABSTAIN, Outcome.EMPTY_ANSWER)


@dataclass
class BatchOptions:
    mode: Mode
    input: Path
    output: Path
    aggregator: Aggregator = Aggregator.SOFT
    batch_size: int = 16
    resume: bool = False
    progress: bool = True
    stage_timeout: float = 600.0
    concurrency: int = 1
    """Batches in flight at once: more than 1 pays off for LLM stages, which wait on the network."""
    calibration: Calibration | None = None
    """The app's decision points (`refcheck calibrate`), applied after the conflict stage."""
    relevance: RelevanceJudge | None = None
    """Diagnostics' relevance judge (`--relevance llm:MODEL`); None: the offline head."""


@dataclass
class Summary:
    """What a run did; kept up to date so an interrupted run can still report it."""

    written: int = 0
    already_done: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)


def is_json_lines(path: Path) -> bool:
    return path.suffix.lower() in JSON_LINES_SUFFIXES


def working_path(output: Path) -> Path:
    """Where finished records are appended while a run is in progress."""
    return output if is_json_lines(output) else output.with_name(output.name + ".partial.jsonl")


# -- reading ------------------------------------------------------------------------------


def _open_text(path: Path) -> TextIO:
    """The file as text, never failing on its bytes: an invalid UTF-8 byte is kept as a lone
    surrogate (`surrogateescape`), so it spoils only the record that holds it."""
    return path.open(encoding="utf-8", errors="surrogateescape")


def _undecodable(text: str) -> str | None:
    """Why a record's text is not UTF-8, or None when it is."""
    raw = _RAW_BYTE.search(text)
    if raw is None:
        return None
    return f"is not valid UTF-8 (byte 0x{ord(raw.group()) - 0xDC00:02x} at character {raw.start()})"


def _looks_like_json_lines(path: Path) -> bool:
    if is_json_lines(path):
        return True
    with _open_text(path) as handle:
        for line in handle:
            if line.strip():
                return not line.lstrip().startswith("[")
    return False


def read_input(path: Path) -> tuple[int, Iterator[tuple[int, Any]]]:
    """The number of records and an iterator of `(index, record or BadRecordError)`.

    JSON Lines are streamed (a line that is not JSON, or not UTF-8, is a bad record); a JSON
    list is loaded whole, as RefChecker does (a file that is not valid JSON is an error for
    the whole run; an element that is not UTF-8 is a bad record).
    """
    if _looks_like_json_lines(path):
        with _open_text(path) as handle:
            total = sum(1 for line in handle if line.strip())
        return total, _json_lines(path)
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"{path} is not valid JSON: {_json_error(exc)}") from exc
    if not isinstance(data, list):
        raise ValueError(f"{path} must hold a JSON list of records, not a {type(data).__name__}")
    if _RAW_BYTE.search(text) is None:
        return len(data), iter(enumerate(data))
    reasons = [_undecodable(text[start:end]) for start, end in _element_spans(text)]
    return len(data), (
        (index, BadRecordError(f"the record {reason}") if reason else record)
        for index, (record, reason) in enumerate(zip(data, reasons, strict=True))
    )


def _element_spans(text: str) -> list[tuple[int, int]]:
    """Where each element of a valid JSON list lies in its text (to tell which holds a byte
    that is not UTF-8)."""
    decoder = json.JSONDecoder()
    spans = []
    position = _after_space(text, text.index("[") + 1)
    while text[position] != "]":
        _, end = decoder.raw_decode(text, position)
        spans.append((position, end))
        position = _after_space(text, end)
        if text[position] == ",":
            position = _after_space(text, position + 1)
    return spans


def _after_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\n\r":
        position += 1
    return position


def _json_error(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "it nests arrays or objects deeper than the JSON parser can follow"
    return str(exc)


def _json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    index = 0
    with _open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            reason = _undecodable(line)
            if reason is not None:
                yield index, BadRecordError(f"line {number} {reason}")
            else:
                try:
                    yield index, json.loads(line)
                except (json.JSONDecodeError, RecursionError) as exc:
                    reason = f"is not valid JSON: {_json_error(exc)}"
                    yield index, BadRecordError(f"line {number} {reason}")
            index += 1


# -- the working file ---------------------------------------------------------------------


def done_records(working: Path) -> dict[int, str | None]:
    """Index -> input fingerprint of the records already written; a line cut short by a crash
    is removed from the file."""
    done: dict[int, str | None] = {}
    if not working.exists():
        return done
    good_end = 0
    with working.open("rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break
            try:
                ours = json.loads(line)[OUR_FIELD]
                done[int(ours["index"])] = ours.get("input_hash")
            except (ValueError, KeyError, TypeError):
                break
            good_end += len(line)
    if good_end < working.stat().st_size:
        with working.open("r+b") as handle:
            handle.truncate(good_end)
    return done


def _check_unchanged(index: int, raw: Any, written: str | None) -> None:
    if written is not None and written != input_hash(raw):
        raise ValueError(
            f"record {index} of the input differs from the one the earlier run checked: the "
            "input changed, so its results cannot be resumed; rerun without --resume"
        )


def _restore_working_file(output: Path, working: Path) -> None:
    """Resuming a JSON output that was already finished: start from its records."""
    if working.exists() or not output.exists() or is_json_lines(output):
        return
    records = json.loads(output.read_text(encoding="utf-8"))
    with working.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")


def _assemble_json(working: Path, output: Path) -> None:
    """Write the working file's records as one JSON list in input order, then remove it."""
    with working.open(encoding="utf-8") as handle:
        lines = [line for line in handle if line.strip()]
    lines.sort(key=lambda line: int(json.loads(line)[OUR_FIELD]["index"]))
    temporary = output.with_name(output.name + ".tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        handle.write("[")
        for number, line in enumerate(lines):
            pretty = json.dumps(json.loads(line), indent=2)
            handle.write(("," if number else "") + "\n  " + pretty.replace("\n", "\n  "))
        handle.write("\n]\n")
    os.replace(temporary, output)
    working.unlink()


# -- running ------------------------------------------------------------------------------


@dataclass
class _Pending:
    index: int
    raw: dict[str, Any]
    record: RefCheckerRecord


class BatchRun:
    """One `refcheck extract | check | extract-check` run over a file."""

    def __init__(
        self,
        options: BatchOptions,
        extractor: Extractor,
        checker: Checker | None,
        errors: TextIO | None = None,
    ) -> None:
        self.options = options
        self.extractor = extractor
        self.summary = Summary()
        self.progress = Progress(0, options.mode.value, errors or sys.stderr, options.progress)
        timeouts = StageTimeouts(extract=options.stage_timeout, check=options.stage_timeout)
        self.pipeline = Pipeline(
            extractor,
            checker,
            options.aggregator,
            timeouts=timeouts,
            max_claims=FILE_LIMITS.max_claims,
            calibration=options.calibration,
            relevance=options.relevance,
        )

    def run(self) -> Summary:
        """Process the file; safe to interrupt (finished batches are on disk)."""
        asyncio.run(self._run())
        return self.summary

    async def _run(self) -> None:
        options = self.options
        working = working_path(options.output)
        total, records = read_input(options.input)
        done: dict[int, str | None] = {}
        if options.resume:
            _restore_working_file(options.output, working)
            done = done_records(working)
        self.summary.already_done = len(done)
        progress = self.progress
        progress.total = total
        progress.advance(len(done))
        with working.open("a" if options.resume else "w", encoding="utf-8") as sink:
            pending: list[_Pending] = []
            in_flight: list[list[_Pending]] = []
            for index, raw in records:
                if index in done:
                    _check_unchanged(index, raw, done[index])
                    continue
                try:
                    if isinstance(raw, BadRecordError):
                        raise raw
                    pending.append(_Pending(index, raw, read_record(raw, options.mode)))
                except BadRecordError as exc:
                    self._skip(index, str(exc))
                    progress.advance()
                if len(pending) >= options.batch_size:
                    in_flight.append(pending)
                    pending = []
                if len(in_flight) >= options.concurrency:
                    await self._process(in_flight, sink)
                    in_flight = []
            await self._process([*in_flight, pending], sink)
        progress.close()
        if not is_json_lines(options.output):
            _assemble_json(working, options.output)

    async def _process(self, batches: list[list[_Pending]], sink: TextIO) -> None:
        """Run batches side by side, then write their records in input order."""
        outputs = await asyncio.gather(*(self._lines(batch) for batch in batches if batch))
        lines = [line for output in outputs for line in output]
        if lines:
            sink.write("\n".join(lines) + "\n")
            sink.flush()
        self.summary.written += len(lines)
        self.progress.advance(sum(len(batch) for batch in batches))

    async def _lines(self, batch: list[_Pending]) -> list[str]:
        """The output lines of one batch; records that fail are reported and left out."""
        mode = self.options.mode
        requests = [to_request(p.record, mode) for p in batch]
        lines: list[str] = []
        if self.pipeline.checker is None:
            extractions = await self.pipeline.extract(requests)
            for pending, extraction in zip(batch, extractions, strict=True):
                if extraction.error:
                    self._skip(pending.index, extraction.error)
                    continue
                record = extracted_record(
                    pending.raw, pending.index, extraction.claims, self.extractor.name
                )
                lines.append(json.dumps(record))
            return lines
        try:
            results = await self.pipeline.run(requests)
        except Exception as exc:
            # The pipeline keeps failures per request; this is a bug of ours, not the data's.
            for pending in batch:
                self._skip(pending.index, f"internal error: {exc!r}")
            return lines
        for pending, result in zip(batch, results, strict=True):
            if result.outcome not in _WRITTEN:
                self._skip(pending.index, f"{result.outcome.value}: {result.message}")
                continue
            record = checked_record(
                pending.raw, pending.index, result, mode, self.options.aggregator
            )
            lines.append(json.dumps(record))
        return lines

    def _skip(self, index: int, reason: str) -> None:
        self.summary.skipped.append((index, reason))
        with contextlib.suppress(OSError):
            self.progress.note(f"refcheck: record {index} skipped: {reason}")
