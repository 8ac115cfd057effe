"""One person labelling an audit file: where they are, what they see, what each key does.

Shared by the terminal labeller and the web page, so both resume alike (at the first claim
with no label), label alike (the label is saved at once, then the next claim with no label
comes), and show the same things. Texts are cut to a few thousand characters, around the
evidence where there is one, so a huge reference costs the screen nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from refcheck_callbacks.review.audit_book import AuditBook

MAX_CHARS = 2000
"""Characters of a text shown at most (the rest is said, not shown)."""
EVIDENCE_CONTEXT = 400
"""Characters shown on each side of an evidence span."""
MAX_REFERENCES = 20
"""References shown at most, besides the evidence."""


@dataclass(frozen=True)
class Cut:
    """A text as shown: `before` + `marked` + `after`, and how many characters were left out."""

    before: str
    marked: str = ""
    after: str = ""
    left_out: int = 0

    def as_dict(self) -> dict[str, object]:
        return {
            "before": self.before,
            "marked": self.marked,
            "after": self.after,
            "left_out": self.left_out,
        }


def cut(text: str, limit: int = MAX_CHARS) -> Cut:
    return Cut(text[:limit], left_out=max(0, len(text) - limit))


def cut_around(text: str, start: int, end: int) -> Cut:
    """The span `[start, end)` of `text` with some context on each side."""
    start, end = max(0, min(start, len(text))), max(0, min(end, len(text)))
    end = max(start, end)
    marked_end = min(end, start + MAX_CHARS)
    first, last = max(0, start - EVIDENCE_CONTEXT), min(len(text), marked_end + EVIDENCE_CONTEXT)
    return Cut(
        text[first:start],
        text[start:marked_end],
        text[marked_end:last],
        left_out=len(text) - (last - first),
    )


@dataclass(frozen=True)
class ClaimView:
    """What the reviewer sees of one claim."""

    position: int
    total: int
    labelled: int
    answer_number: int
    claim_number: int
    claims_in_answer: int
    question: Cut | None
    claim: Cut
    answer: Cut
    predicted: str | None
    probabilities: dict[str, float] | None
    label: object
    evidence: Cut | None
    evidence_reference: int | None
    references: list[tuple[str | None, Cut]] = field(default_factory=list)
    references_left_out: int = 0

    def as_dict(self) -> dict[str, object]:
        return {
            "position": self.position,
            "total": self.total,
            "labelled": self.labelled,
            "answer_number": self.answer_number,
            "claim_number": self.claim_number,
            "claims_in_answer": self.claims_in_answer,
            "question": None if self.question is None else self.question.as_dict(),
            "claim": self.claim.as_dict(),
            "answer": self.answer.as_dict(),
            "predicted": self.predicted,
            "probabilities": self.probabilities,
            "label": self.label,
            "evidence": None if self.evidence is None else self.evidence.as_dict(),
            "evidence_reference": self.evidence_reference,
            "references": [{"id": i, "text": c.as_dict()} for i, c in self.references],
            "references_left_out": self.references_left_out,
        }


def _texts(record: dict[str, Any]) -> list[tuple[str | None, str]]:
    out: list[tuple[str | None, str]] = []
    for reference in record["references"]:
        if isinstance(reference, str):
            out.append((None, reference))
        else:
            given = reference.get("id")
            out.append((None if given is None else str(given), reference["text"]))
    return out


def _entry(values: object, index: int) -> Any:
    """`values[index]` of an optional parallel list; None where it is absent or malformed."""
    if isinstance(values, list) and index < len(values):
        return values[index]
    return None


def _evidence(
    record: dict[str, Any], claim: int, references: list[tuple[str | None, str]]
) -> tuple[Cut, int] | None:
    span = _entry(record.get("evidence"), claim)
    if not isinstance(span, dict):
        return None
    index, start, end = (span.get(k) for k in ("reference_index", "start", "end"))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (index, start, end)):
        return None
    assert isinstance(index, int) and isinstance(start, int) and isinstance(end, int)
    if not 0 <= index < len(references):
        return None
    return cut_around(references[index][1], start, end), index


def _probabilities(record: dict[str, Any], claim: int) -> dict[str, float] | None:
    given = _entry(record.get("probabilities"), claim)
    if not isinstance(given, dict):
        return None
    return {
        str(k): float(v)
        for k, v in given.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }


class ReviewSession:
    """The reviewer's place in an `AuditBook` and the actions of the keys."""

    def __init__(self, book: AuditBook) -> None:
        self.book = book
        self.position = self._unlabelled_from(0)

    @property
    def total(self) -> int:
        return len(self.book.positions)

    @property
    def done(self) -> bool:
        """Past the last claim: every claim is labelled, or the rest were skipped."""
        return self.position >= self.total

    def _unlabelled_from(self, start: int) -> int:
        """The first claim from `start` on without a label; `total` when there is none."""
        for position in range(start, self.total):
            if self.book.label(position) is None:
                return position
        return self.total

    def give(self, label: str | None) -> None:
        """Label the current claim (saved at once), then go to the next claim with no label."""
        if self.done:
            return
        self.book.set_label(self.position, label)
        self.position = self._unlabelled_from(self.position + 1)

    def skip(self) -> None:
        """Leave the current claim unlabelled and go to the next claim."""
        self.position = min(self.total, self.position + 1)

    def back(self) -> None:
        self.position = max(0, self.position - 1)

    def view(self) -> ClaimView | None:
        """The current claim; None when done."""
        if self.done:
            return None
        record, claim = self.book.record_at(self.position)
        line, _ = self.book.positions[self.position]
        references = _texts(record)
        evidence = _evidence(record, claim, references)
        question = record.get("question")
        predicted = _entry(record.get("predicted"), claim)
        return ClaimView(
            position=self.position,
            total=self.total,
            labelled=self.book.labelled(),
            answer_number=self.book.answer_numbers[line],
            claim_number=claim + 1,
            claims_in_answer=len(record["claims"]),
            question=cut(question) if isinstance(question, str) else None,
            claim=cut(record["claims"][claim]),
            answer=cut(str(record.get("response") or "")),
            predicted=predicted if isinstance(predicted, str) else None,
            probabilities=_probabilities(record, claim),
            label=record["labels"][claim],
            evidence=None if evidence is None else evidence[0],
            evidence_reference=None if evidence is None else evidence[1],
            references=[(ref_id, cut(text)) for ref_id, text in references[:MAX_REFERENCES]],
            references_left_out=max(0, len(references) - MAX_REFERENCES),
        )
