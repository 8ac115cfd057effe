"""The reason vocabulary: the label values dashboards and alert rules select on never change,
whether a count was given an enum member or its string, and the shipped rules name only
values the vocabulary has."""

from __future__ import annotations

import re
from pathlib import Path

from scripted_checkers import KeywordChecker
from telemetry import Telemetry

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.contract.reasons import (
    LOST_REASONS,
    AuditReason,
    DropReason,
    ErrorReason,
    FeedbackReason,
    ForwardReason,
    IgnoreReason,
    RejectReason,
    SkipReason,
    Tally,
    TruncateReason,
    reason_label,
)
from refcheck_callbacks.exporters import names

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"

SHIPPED = {
    Tally: {
        "dropped",
        "skipped",
        "errors",
        "failed",
        "feedback_refused",
        "truncated",
        "rejected",
        "not_forwarded",
        "ignored",
        "audited",
    },
    SkipReason: {
        "sampled_out", "no_references", "no_answer", "unpaired", "run_error", "run_cancelled",
        "answer_incomplete", "run_expired", "query_error", "stream_incomplete", "stream_error",
        "stream_not_read", "uninstrumented", "trace_unpaired",
    },
    DropReason: {
        "queue_full", "shutdown", "run_overflow", "shutdown_timeout", "exit", "signal",
        "worker_crash", "trace_overflow", "trace_too_large", "trace_expired",
    },
    ErrorReason: {
        "submit", "exporter", "on_result", "langchain_callback", "llamaindex_callback",
        "feedback", "trace_pairing",
    },
    RejectReason: {
        "malformed", "too_large", "unauthorized", "unsupported_media_type", "not_found",
        "timeout", "no_room", "bad_span_id",
    },
    ForwardReason: {"queue_full", "failed", "refused", "timeout", "bad_reply", "shutdown"},
    IgnoreReason: {"metrics", "logs"},
    FeedbackReason: {"unknown_response", "invalid_labels", "write_failed"},
    AuditReason: {"written", "file_full", "write_failed", "queue_full", "shutdown"},
    TruncateReason: {
        "answer", "question", "references", "reference_text", "claims", "claim", "model",
        "response_id", "metadata",
    },
}  # fmt: skip
"""The values counted before the vocabulary became enums (as strings across the package)."""


def test_the_values_are_the_ones_shipped() -> None:
    for vocabulary, values in SHIPPED.items():
        assert {member.value for member in vocabulary} == values, vocabulary.__name__
    assert [r.value for r in LOST_REASONS] == ["shutdown_timeout", "exit", "signal", "worker_crash"]


def test_an_enum_and_its_string_count_as_one_and_export_as_the_plain_string(
    telemetry: Telemetry,
) -> None:
    monitor = RefCheckMonitor(
        checker=KeywordChecker(), exporters=[telemetry.exporter()], placement="thread"
    )
    with monitor:
        monitor.skipped(SkipReason.NO_REFERENCES)
        monitor.record(Tally.SKIPPED, "no_references", 2)
        monitor.dropped(DropReason.QUEUE_FULL)
        assert monitor.stats.get(Tally.SKIPPED, SkipReason.NO_REFERENCES) == 3
        assert monitor.stats.get(Tally.SKIPPED, "no_references") == 3
        assert monitor.stats.snapshot() == {
            "dropped": {"queue_full": 1},
            "skipped": {"no_references": 3},
        }
        [(attributes, point)] = telemetry.points(names.SKIPPED).items()
        [(key, value)] = attributes
        assert (key, value, point.value) == (names.REASON, "no_references", 3)
        assert type(value) is str  # not the enum: its str() is "SkipReason.NO_REFERENCES"
    assert reason_label(ErrorReason.SUBMIT) == "submit" and reason_label("custom") == "custom"


def test_the_shipped_rules_and_dashboard_select_only_values_the_vocabulary_has() -> None:
    known = {member.value for members in SHIPPED for member in members}
    selected = {
        value
        for path in DEPLOY.rglob("*")
        if path.suffix in {".yml", ".yaml", ".json"}
        for value in re.findall(r'refcheck_reason\\?"?\s*[=~!]+\s*\\?"([^"\\]+)', path.read_text())
    }
    assert selected, "the deploy files select on refcheck_reason somewhere"
    assert selected <= known
