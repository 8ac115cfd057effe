"""The random audit (`RefCheckMonitor(audit_rate=, audit_file=)`): a uniform share of checked
answers, drawn whatever their verdicts, appended to the audit file after `redact`, bounded,
written off the app's thread, and every draw counted by what became of it."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from calibrations import calibration_for, embedded_identity
from feedback_records import calibrate_records
from scripted_checkers import KeywordChecker
from telemetry import Telemetry

from refcheck_callbacks import AuditReason, ConfigurationError, RefCheckMonitor, Tally
from refcheck_callbacks.check.calibration.points import defaults_of
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.engine.audit import Audit
from refcheck_callbacks.engine.audit_file import AuditFile, locked
from refcheck_callbacks.exporters import names
from refcheck_callbacks.support.deadline import Deadline
from refcheck_callbacks.types import CheckResult

REFERENCES = [{"id": "doc-1", "text": "The Eiffel Tower is 330 metres tall. It stands in Paris."}]
SUPPORTED = "The tower is supported by the record."
CONTRADICTED = "The tower is contradicted by the record."


def _monitor(**options: Any) -> RefCheckMonitor:
    options.setdefault("exporters", [])
    return RefCheckMonitor(checker=KeywordChecker(), placement="thread", conflict=None, **options)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_drawn_answer_is_a_record_waiting_for_labels(
    embedded_checker: EmbeddedChecker, tmp_path: Path
) -> None:
    """The real offline checker, with a calibration: the record has what a reviewer and the
    rate fit need, and `refcheck calibrate`'s reader takes it (no labels yet)."""
    path = tmp_path / "audit.jsonl"
    calibration = calibration_for(embedded_identity(), defaults_of(EmbeddedChecker()))
    with RefCheckMonitor(
        checker=embedded_checker,
        placement="thread",
        exporters=[],
        calibration=calibration,
        audit_rate=1.0,
        audit_file=path,
    ) as monitor:
        result = monitor.check(
            question="How tall is the Eiffel Tower?",
            answer="The Eiffel Tower is 330 metres tall. It stands in Rome.",
            references=REFERENCES,
            response_id="chatcmpl-7",
        )
        assert monitor.flush(10)
        assert monitor.stats.snapshot() == {"audited": {"written": 1}}
    [record] = calibrate_records(path)
    assert record["audit"] is True and record["calibration"] == calibration.id
    assert (record["request_id"], record["response_id"]) == (
        result.request.request_id,
        "chatcmpl-7",
    )
    assert record["question"] == "How tall is the Eiffel Tower?"
    assert record["references"] == REFERENCES
    assert record["claims"] == [claim.text for claim in result.claims]
    assert record["labels"] == [None] * len(result.claims)
    assert record["predicted"] == [v.label.value.capitalize() for v in result.verdicts if v.label]
    assert record["checker"] == result.checker
    for verdict, probabilities, evidence in zip(
        result.verdicts, record["probabilities"], record["evidence"], strict=True
    ):
        assert verdict.probabilities is not None
        assert probabilities == {k.value: p for k, p in verdict.probabilities.items()}
        first = verdict.evidence[0]
        assert evidence == {
            "reference_index": first.reference_index,
            "start": first.span.start,
            "end": first.span.end,
        }
    assert record["drawn_at"].endswith("+00:00") and record["labelled_at"] is None


def test_the_draw_is_a_uniform_share_whatever_the_verdict(tmp_path: Path) -> None:
    """300 supported and 300 contradicted answers at rate 0.3: each group is drawn at about
    0.3, and the same seed draws the same answers."""
    drawn: list[list[str]] = []
    for run in range(2):
        path = tmp_path / f"audit-{run}.jsonl"
        with _monitor(audit_rate=0.3, audit_file=path, audit_seed=7) as monitor:
            for n in range(300):
                for answer in (SUPPORTED, CONTRADICTED):
                    text = f"{answer} Number {n} is supported."
                    monitor.check(answer=text, references=REFERENCES)
            assert monitor.flush(10)
            assert monitor.stats.get(Tally.AUDITED) == monitor.stats.get(
                Tally.AUDITED, AuditReason.WRITTEN
            )
        drawn.append([record["response"] for record in _records(path)])
    assert drawn[0] == drawn[1]
    for answer in (SUPPORTED, CONTRADICTED):
        share = sum(text.startswith(answer) for text in drawn[0]) / 300
        assert 0.22 < share < 0.38, (answer, share)


def test_the_text_is_the_redacted_text_and_a_failed_redaction_is_never_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "audit.jsonl"

    def redact(text: str) -> str:
        if "secret" in text:
            raise RuntimeError("cannot redact")
        return text.replace("Paris", "[city]")

    with _monitor(audit_rate=1.0, audit_file=path, redact=redact) as monitor:
        monitor.check(answer="The tower is in Paris.", references=REFERENCES, question="Paris?")
        failed = monitor.check(answer="A secret is supported.", references=REFERENCES)
        assert failed.error_type == "RedactionError" and not failed.claims
        assert monitor.flush(10)
        assert monitor.stats.get(Tally.AUDITED) == 1
    text = path.read_text(encoding="utf-8")
    assert "Paris" not in text and "secret" not in text
    [record] = _records(path)
    assert record["response"] == "The tower is in [city]."
    assert record["question"] == "[city]?"


def test_answers_without_claims_are_not_drawn(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with _monitor(audit_rate=1.0, audit_file=path) as monitor:
        monitor.check(answer="", references=REFERENCES)
        monitor.check(answer="The tower is supported.", references=[])
        assert monitor.flush(10)
        assert monitor.stats.get(Tally.AUDITED) == 0
    assert not path.exists()


def test_past_its_size_bound_the_file_takes_no_more_and_says_so(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    path = tmp_path / "audit.jsonl"
    with _monitor(
        audit_rate=1.0, audit_file=path, audit_max_bytes=1500, exporters=[telemetry.exporter()]
    ) as monitor:
        for _ in range(5):
            monitor.check(answer=SUPPORTED, references=REFERENCES)
        assert monitor.flush(10)
        counts = monitor.stats.snapshot()["audited"]
    records = _records(path)  # every line whole
    assert path.stat().st_size <= 1500
    assert counts == {"written": len(records), "file_full": 5 - len(records)}
    assert 1 <= len(records) < 5
    points = telemetry.points(names.AUDIT_DRAWS)
    assert {dict(key)[names.REASON]: p.value for key, p in points.items()} == counts


def test_a_file_that_cannot_be_written_is_counted_and_checking_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "no-such-folder" / "audit.jsonl"
    with _monitor(audit_rate=1.0, audit_file=path) as monitor:
        result = monitor.check(answer=SUPPORTED, references=REFERENCES)
        assert result.outcome == "checked"
        assert monitor.flush(10)
        assert monitor.stats.snapshot() == {"audited": {"write_failed": 1}}


def _results(count: int) -> list[CheckResult]:
    with _monitor() as monitor:
        return [monitor.check(answer=SUPPORTED, references=REFERENCES) for _ in range(count)]


def test_the_writer_waits_for_the_disk_not_the_caller_and_its_queue_is_bounded(
    tmp_path: Path,
) -> None:
    """The file held locked by another writer (a reviewer saving): `draw` returns at once,
    draws beyond the bound are counted `queue_full`, and the rest are written after."""
    path = tmp_path / "audit.jsonl"
    counted: list[AuditReason] = []
    audit = Audit(1.0, AuditFile(path), counted.append, max_pending=2)
    with locked(path):
        audit.draw(_results(1))  # taken by the writer, which waits for the lock
        while audit._pending:
            threading.Event().wait(0.01)
        audit.draw(_results(4))
        assert counted == [AuditReason.QUEUE_FULL] * 2
        assert not audit.flush(Deadline(0.1))
    assert audit.flush(Deadline(10))
    assert counted == [AuditReason.QUEUE_FULL] * 2 + [AuditReason.WRITTEN] * 3
    assert len(_records(path)) == 3


def test_what_shutdown_cannot_write_in_time_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    counted: list[AuditReason] = []
    audit = Audit(1.0, AuditFile(path), counted.append)
    with locked(path):
        audit.draw(_results(3))
        assert not audit.shutdown(Deadline(0.2))
        audit.draw(_results(1))
    assert audit.flush(Deadline(10))
    # One was being written when time ran out: it is written once the lock is free.
    assert sorted(counted) == sorted([AuditReason.SHUTDOWN] * 3 + [AuditReason.WRITTEN])


def test_a_record_appended_while_the_file_is_replaced_lands_in_the_new_file(
    tmp_path: Path,
) -> None:
    """What `refcheck review` does when it saves labels: write a new file and move it over the
    old one, holding the lock. A record waiting for the lock meanwhile is not lost with the old
    file."""
    path = tmp_path / "audit.jsonl"
    counted: list[AuditReason] = []
    audit = Audit(1.0, AuditFile(path), counted.append)
    path.write_text('{"old": true}\n', encoding="utf-8")
    with locked(path):
        audit.draw(_results(1))
        threading.Event().wait(0.1)
        replacement = tmp_path / "audit.jsonl.new"
        replacement.write_text('{"new": true}\n', encoding="utf-8")
        os.replace(replacement, path)
    assert audit.flush(Deadline(10))
    lines = _records(path)
    assert lines[0] == {"new": True} and lines[1]["audit"] is True and len(lines) == 2


def test_the_environment_turns_the_audit_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REFCHECK_AUDIT_FILE", str(tmp_path / "audit.jsonl"))
    monkeypatch.setenv("REFCHECK_AUDIT_MAX_BYTES", "2MiB")
    with _monitor() as monitor:
        assert monitor.audit is not None
        assert (monitor.audit.rate, monitor.audit.file.max_bytes) == (0.01, 2 << 20)
    monkeypatch.setenv("REFCHECK_AUDIT_RATE", "0.5")
    with _monitor(audit_rate=0.25) as monitor:  # a keyword wins
        assert monitor.audit is not None and monitor.audit.rate == 0.25
    monkeypatch.delenv("REFCHECK_AUDIT_FILE")
    with pytest.raises(ConfigurationError, match=r"audit_rate=0\.5 without an audit file"):
        _monitor()
    monkeypatch.setenv("REFCHECK_AUDIT_RATE", "5%")
    with pytest.raises(ConfigurationError, match="REFCHECK_AUDIT_RATE='5%' cannot be used"):
        _monitor()


def test_in_app_labels_of_an_audit_sample_are_marked(tmp_path: Path) -> None:
    path = tmp_path / "feedback.jsonl"
    with _monitor(feedback_file=path) as monitor:
        monitor.check(answer=f"{SUPPORTED} {CONTRADICTED}", references=REFERENCES, response_id="a")
        monitor.check(answer=SUPPORTED, references=REFERENCES, response_id="thumbs")
        assert monitor.feedback("a", ["Entailment", "Neutral"], audit=True)
        assert monitor.feedback("thumbs", False)
    audited, thumbs = calibrate_records(path)
    assert audited["audit"] is True and audited["labels"] == ["Entailment", "Neutral"]
    assert audited["predicted"] == ["Entailment", "Contradiction"]
    assert audited["probabilities"] == [None, None] and audited["evidence"] == [None, None]
    assert "audit" not in thumbs
