"""Labelled answers in RefChecker's format: what `refcheck calibrate` reads and
`monitor.feedback` appends. JSON Lines (one record a line) or a JSON list of

    {"response_id": "..." (optional: claims of one answer stay together in splits),
     "question": "..." (optional), "response": "..." (optional),
     "references": [{"id": "...", "text": "..."}, ...] or ["passage", ...],
       or RefChecker's "reference": "text" or [...], or "context": "text",
     "claims": ["claim text" or [head, relation, tail], ...],
     "labels": [one per claim: "Entailment" | "Neutral" | "Contradiction" (any case),
                or true / false for supported, or null for a claim nobody labelled],
     "checker": "..." and "predicted": [...] (optional: what the checker said; not read),
     "audit": true (optional: the answer was drawn by the monitor's random audit,
       docs/rates.md; only these labels fit the flag rates a prevalence estimate needs),
     "drawn_at" / "labelled_at": ISO 8601 (optional: which audit labels are the latest)}

A record that cannot be used is reported with its line (JSON Lines) or its position (a JSON
list) and skipped; the rest are read. Fitting on silently dropped rows would fit data nobody
chose, so every skip is said.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from refcheck_callbacks.bench.datasets import LabelledExample
from refcheck_callbacks.types import Label, Triplet

_LABELS = {label.value: label for label in Label}


class _Reference(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str | None = None
    text: str


class LabelledRecord(BaseModel):
    """One labelled answer (module docstring). Unknown fields are allowed and ignored."""

    model_config = ConfigDict(extra="allow")

    response_id: str | None = None
    question: str | None = None
    response: str | None = None
    references: list[_Reference | str] | None = None
    reference: str | list[str] | None = None
    context: str | None = None
    claims: list[str | list[str]]
    labels: list[bool | str | None]
    audit: bool = False
    drawn_at: str | None = None
    labelled_at: str | None = None

    @field_validator("labels")
    @classmethod
    def _known_labels(cls, labels: list[bool | str | None]) -> list[bool | str | None]:
        for index, label in enumerate(labels):
            if isinstance(label, str) and label.strip().lower() not in _LABELS:
                raise ValueError(
                    f"label {index} is {label!r}: use Entailment, Neutral, Contradiction, "
                    "true / false (supported), or null"
                )
        return labels

    @model_validator(mode="after")
    def _parallel(self) -> LabelledRecord:
        if len(self.labels) != len(self.claims):
            raise ValueError(
                f"'labels' has {len(self.labels)} entries for {len(self.claims)} claims: give "
                "one per claim (null for a claim not labelled)"
            )
        for index, claim in enumerate(self.claims):
            parts = claim if isinstance(claim, list) else [claim]
            if isinstance(claim, list) and len(claim) != 3:
                raise ValueError(f"claim {index} is a list of {len(claim)}; a triplet has 3")
            if not all(part.strip() for part in parts):
                raise ValueError(f"claim {index} is empty")
        if not self.reference_texts():
            raise ValueError("no reference text: give 'references', 'reference' or 'context'")
        return self

    def reference_texts(self) -> list[str]:
        given: list[Any] = []
        for source in (self.references, self.reference, self.context):
            if source is not None:
                given += source if isinstance(source, list) else [source]
        texts = [item.text if isinstance(item, _Reference) else item for item in given]
        return [text for text in texts if text.strip()]


def _claim_text(claim: str | list[str]) -> str:
    if isinstance(claim, str):
        return claim.strip()
    subject, predicate, obj = claim
    return Triplet(subject=subject, predicate=predicate, object=obj).as_text()


def _gold(label: bool | str) -> tuple[Label | None, bool]:
    """(the 3-way label if given, supported)."""
    if isinstance(label, bool):
        return None, label
    three_way = _LABELS[label.strip().lower()]
    return three_way, three_way is Label.ENTAILMENT


@dataclass
class LabelledRecords:
    """The labelled claims read from one file, and what could not be read."""

    examples: list[LabelledExample] = field(default_factory=list)
    records: int = 0
    """Records read and used."""
    problems: list[str] = field(default_factory=list)
    """One message per skipped record: where it is and what is wrong."""
    audited: dict[int, tuple[str, int]] = field(default_factory=dict)
    """Index in `examples` of each claim labelled in an audit record -> (when it was labelled,
    else drawn, else ""; its record's position): sorted, the latest come last."""


def _positioned(text: str) -> list[tuple[str, Any]]:
    """(where, parsed record or the parse error) per record: a JSON list, else JSON Lines."""
    if text.lstrip().startswith("["):
        try:
            records = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            return [("the file", ValueError(f"not a JSON list: {exc}"))]
        if not isinstance(records, list):
            return [("the file", ValueError("not a JSON list"))]
        return [(f"record {n}", record) for n, record in enumerate(records, start=1)]
    out: list[tuple[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                out.append((f"line {number}", json.loads(line)))
            except (json.JSONDecodeError, RecursionError) as exc:
                out.append((f"line {number}", ValueError(f"not JSON: {exc}")))
    return out


def _examples(record: LabelledRecord, where: str) -> list[LabelledExample]:
    response = record.response_id or where
    references = record.reference_texts()
    examples = []
    for index, (claim, label) in enumerate(zip(record.claims, record.labels, strict=True)):
        if label is None:
            continue
        three_way, supported = _gold(label)
        examples.append(
            LabelledExample(
                dataset="labelled",
                example_id=f"{where}/{index}",
                group=response,
                claim=_claim_text(claim),
                references=references,
                label=three_way,
                supported=supported,
                response_id=response,
            )
        )
    return examples


def read_labelled_records(path: Path) -> LabelledRecords:
    """Every usable labelled claim of `path`; `OSError` only when the file cannot be read."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    read = LabelledRecords()
    for where, raw in _positioned(text):
        if isinstance(raw, Exception):
            read.problems.append(f"{path}, {where}: {raw}")
            continue
        if not isinstance(raw, dict):
            read.problems.append(
                f"{path}, {where}: a record is a JSON object, not {type(raw).__name__}"
            )
            continue
        try:
            record = LabelledRecord.model_validate(raw)
        except ValidationError as exc:
            error = exc.errors()[0]
            at = ".".join(str(p) for p in error["loc"])
            read.problems.append(f"{path}, {where}: {at + ': ' if at else ''}{error['msg']}")
            continue
        read.records += 1
        examples = _examples(record, where)
        if record.audit:
            when = record.labelled_at or record.drawn_at or ""
            for offset in range(len(examples)):
                read.audited[len(read.examples) + offset] = (when, read.records)
        read.examples += examples
    return read
