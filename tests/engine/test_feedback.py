"""`monitor.feedback`: a person's verdict on a checked answer becomes evaluation events, an
agreement count, and a line of the labelled file `refcheck calibrate` reads; what cannot be
recorded returns False with a counted reason, never an exception."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from feedback_records import calibrate_records
from scripted_checkers import KeywordChecker
from telemetry import Telemetry

from refcheck_callbacks import CheckResult, RefCheckMonitor, Tally, TraceContext
from refcheck_callbacks.bench.labelled_records import read_labelled_records
from refcheck_callbacks.contract.components import Exporter
from refcheck_callbacks.exporters import names

REFERENCES = [{"id": "doc-1", "text": "The Eiffel Tower is 330 metres tall. It stands in Paris."}]
ANSWER = (
    "The tower is supported by the record. The tower is contradicted by the record. "
    "The tower is unverified by the record."
)
"""Three claims the scripted checker labels Entailment, Contradiction, Neutral."""


def _monitor(telemetry: Telemetry, **options: Any) -> RefCheckMonitor:
    return RefCheckMonitor(
        checker=KeywordChecker(),
        placement="thread",
        conflict=None,
        exporters=[telemetry.exporter()],
        **options,
    )


def _check(monitor: RefCheckMonitor, answer: str = ANSWER, **fields: Any) -> CheckResult:
    return monitor.check(
        question="How tall is the tower?", answer=answer, references=REFERENCES, **fields
    )


def _feedback_events(telemetry: Telemetry) -> list[dict[str, Any]]:
    return [
        dict(record.log_record.attributes or {})
        for record in telemetry.evaluation_records()
        if (record.log_record.attributes or {}).get(names.GEN_AI_EVALUATION_NAME)
        == names.FEEDBACK_EVALUATION
    ]


def _agreement(telemetry: Telemetry) -> dict[tuple[str, str, str], int]:
    """(checker's verdict, person's label, agreed) -> claims."""
    return {
        (
            dict(key)[names.VERDICT],
            dict(key)[names.FEEDBACK_LABEL],
            dict(key)[names.FEEDBACK_AGREED],
        ): (point.value)
        for key, point in telemetry.points(names.FEEDBACK_CLAIMS).items()
    }


def test_claim_labels_go_to_events_the_agreement_count_and_the_file(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    path = tmp_path / "feedback.jsonl"
    with _monitor(telemetry, feedback_file=path) as monitor:
        result = _check(monitor, response_id="chatcmpl-1")
        # The person: the first two right, the third is in fact contradicted, not unverified.
        assert monitor.feedback("chatcmpl-1", ["Entailment", "contradiction", "Contradiction"])
        # By the request id too, with booleans: the second claim holds after all.
        assert monitor.feedback(result.request.request_id, [True, True, None])

    assert _agreement(telemetry) == {
        ("entailment", "entailment", "true"): 1,
        ("contradiction", "contradiction", "true"): 1,
        ("neutral", "contradiction", "false"): 1,
        ("entailment", "supported", "true"): 1,
        ("contradiction", "supported", "false"): 1,
    }
    events = _feedback_events(telemetry)
    assert [(e[names.CLAIM_INDEX], e[names.GEN_AI_EVALUATION_SCORE_LABEL]) for e in events] == [
        (0, "entailment"), (1, "contradiction"), (2, "contradiction"),
        (0, "supported"), (1, "supported"),
    ]  # fmt: skip
    assert events[2][names.FEEDBACK_AGREED] is False
    assert events[2][names.VERDICT] == "neutral"
    assert {e[names.GEN_AI_RESPONSE_ID] for e in events} == {
        "chatcmpl-1",
        result.request.request_id,
    }
    assert not any(key in event for event in events for key in names.CONTENT_ATTRIBUTES)

    first, second = calibrate_records(path)
    assert first["response_id"] == "chatcmpl-1"
    assert first["request_id"] == second["request_id"] == result.request.request_id
    assert first["question"] == "How tall is the tower?" and first["response"] == ANSWER
    assert first["references"] == REFERENCES
    assert first["claims"] == [claim.text for claim in result.claims]
    assert first["labels"] == ["Entailment", "Contradiction", "Contradiction"]
    assert first["predicted"] == ["Entailment", "Contradiction", "Neutral"]
    assert first["checker"] == "keyword"
    assert second["labels"] == [True, True, None]


def test_one_label_for_the_answer(telemetry: Telemetry, tmp_path: Path) -> None:
    path = tmp_path / "feedback.jsonl"
    with _monitor(telemetry, feedback_file=path) as monitor:
        _check(monitor, response_id="all-good", answer="The tower stands in Paris.")
        _check(monitor, response_id="bad")
        # Supported: every claim is; not supported: which of three claims is not is unknown.
        assert monitor.feedback("all-good", True)
        assert monitor.feedback("bad", "Neutral")

    good, bad = calibrate_records(path)
    assert (good["labels"], good["answer_label"]) == ([True], True)
    assert (bad["labels"], bad["answer_label"]) == ([None, None, None], "Neutral")
    answer_events = [e for e in _feedback_events(telemetry) if names.CLAIM_INDEX not in e]
    # The checker found claims not supported in the bad answer: it agrees with the person.
    assert [
        (e[names.GEN_AI_EVALUATION_SCORE_LABEL], e[names.FEEDBACK_AGREED]) for e in answer_events
    ] == [("supported", True), ("neutral", True)]
    assert _agreement(telemetry) == {("entailment", "supported", "true"): 1}


def test_feedback_it_cannot_record_is_counted_and_never_raises(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    path = tmp_path / "feedback.jsonl"
    with _monitor(telemetry, feedback_file=path, feedback_memory=2) as monitor:
        ids = [_check(monitor).request.request_id for _ in range(3)]
        assert not monitor.feedback(ids[0], ["Entailment"] * 3)  # forgotten: the cap is 2
        assert not monitor.feedback("never-seen", True)
        assert not monitor.feedback(None, True)  # type: ignore[arg-type]
        assert not monitor.feedback(["unhashable"], True)  # type: ignore[arg-type]
        assert not monitor.feedback(ids[2], ["Entailment"])  # 1 label for 3 claims
        assert not monitor.feedback(ids[2], ["Entailment", "Wrong", None])
        assert not monitor.feedback(ids[2], [None, None, None])  # nothing labelled
        assert not monitor.feedback(ids[2], 0.5)  # type: ignore[arg-type]
        assert monitor.feedback(ids[1], ["Entailment"] * 3)  # still remembered
        stats = monitor.stats.snapshot()
    assert stats == {"feedback_refused": {"unknown_response": 4, "invalid_labels": 4}}
    refused = telemetry.points(names.FEEDBACK_REFUSED)
    assert {dict(key)[names.REASON]: p.value for key, p in refused.items()} == {
        "unknown_response": 4,
        "invalid_labels": 4,
    }
    assert len(calibrate_records(path)) == 1


def test_the_file_holds_redacted_text_and_nothing_of_an_answer_whose_redaction_failed(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    path = tmp_path / "feedback.jsonl"

    def redact(text: str) -> str:
        if "poisoned" in text:
            raise RuntimeError("cannot redact this")
        return text.replace("Eiffel", "[NAME]").replace("tower", "[THING]")

    with _monitor(telemetry, feedback_file=path, redact=redact) as monitor:
        redacted = _check(monitor, response_id="redacted")
        withheld = _check(monitor, response_id="withheld", answer="A poisoned answer.")
        assert monitor.feedback("redacted", True)
        assert not monitor.feedback("withheld", True)
        assert monitor.stats.get(Tally.FEEDBACK_REFUSED, "unknown_response") == 1
    assert redacted.claims and not withheld.claims
    text = path.read_text(encoding="utf-8")
    assert "Eiffel" not in text and "tower" not in text and "[NAME]" in text
    assert "poisoned" not in text


def test_no_file_keeps_no_text_and_a_file_that_cannot_be_written_refuses(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    with _monitor(telemetry) as monitor:
        _check(monitor, response_id="one")
        assert monitor.feedback("one", True)
        assert [p.name for p in tmp_path.iterdir()] == []
        [remembered] = monitor._feedback._results._data.values()
        assert remembered.text is None

    unwritable = tmp_path / "no-such-dir" / "feedback.jsonl"
    with _monitor(telemetry, feedback_file=unwritable) as monitor:
        _check(monitor, response_id="two")
        assert not monitor.feedback("two", True)
        assert monitor.stats.snapshot() == {"feedback_refused": {"write_failed": 1}}
    # Not written, not exported: only the first monitor's three claims were counted.
    assert sum(p.value for p in telemetry.points(names.FEEDBACK_CLAIMS).values()) == 3


FULL_DISK_SCRIPT = Path(__file__).parents[1] / "helpers" / "full_disk_feedback.py"
HELPERS = str(FULL_DISK_SCRIPT.parent)


def _own_tmpfs_command(folder: Path) -> list[str]:
    """A command prefix that runs the rest in a mount namespace of its own, with a 1 MiB tmpfs
    on `folder` (no root needed where user namespaces are allowed); skips where it cannot."""
    prefix = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c"]
    mount = 'mount -t tmpfs -o size=1m tmpfs "$0" && exec "$@"'
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) to mount a tmpfs of the test's own")
    probe = subprocess.run([*prefix, mount, str(folder), "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs in a namespace here: {probe.stderr.decode()[-200:]}")
    return [*prefix, mount, str(folder)]


@pytest.mark.parametrize("mechanism", ["file-size-limit", "full-tmpfs"])
def test_a_full_disk_leaves_no_torn_record_and_the_next_record_is_whole(
    mechanism: str, tmp_path: Path
) -> None:
    folder = tmp_path / "disk"
    folder.mkdir()
    command = [sys.executable, str(FULL_DISK_SCRIPT), mechanism, str(folder)]
    if mechanism == "full-tmpfs":
        command = [*_own_tmpfs_command(folder), *command]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([HELPERS, *sys.path])}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])

    # Refused on the full disk, counted, and nothing of it left; recorded once there is room.
    assert seen["recorded"] == [True, False, True]
    assert seen["unchanged_on_a_full_disk"]
    assert seen["refused"] == {"feedback_refused": {"write_failed": 1}}
    written = tmp_path / "feedback.jsonl"
    written.write_text(seen["file"], encoding="utf-8")
    records = calibrate_records(written)
    assert [record["response_id"] for record in records] == ["first", "with-room-again"]


def test_a_record_starts_on_a_new_line_after_a_torn_one(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    path = tmp_path / "feedback.jsonl"
    path.write_bytes(b'{"response_id": "torn by a crash", "clai')
    with _monitor(telemetry, feedback_file=path) as monitor:
        _check(monitor, response_id="after")
        assert monitor.feedback("after", True)
    torn, whole = path.read_text(encoding="utf-8").splitlines()
    assert torn.endswith('"clai') and json.loads(whole)["response_id"] == "after"
    assert len(read_labelled_records(path).problems) == 1  # the torn line alone


def test_feedback_memory_zero_turns_it_off(telemetry: Telemetry) -> None:
    with _monitor(telemetry, feedback_memory=0) as monitor:
        result = _check(monitor)
        assert not monitor.feedback(result.request.request_id, True)
    with pytest.raises(ValueError, match="feedback_memory"):
        _monitor(telemetry, feedback_memory=-1)


def test_in_the_default_placement_the_app_remembers_and_writes_redacted_text(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    path = tmp_path / "feedback.jsonl"
    with RefCheckMonitor(
        checker=KeywordChecker,  # built in the child process
        placement="process",
        conflict=None,
        exporters=[telemetry.exporter()],
        redact=lambda text: text.replace("Eiffel", "[NAME]"),  # a closure: stays in the app
        feedback_file=path,
    ) as monitor:
        assert monitor.submit(answer=ANSWER, references=REFERENCES, response_id="submitted")
        assert monitor.flush(timeout=60)
        assert monitor.feedback("submitted", ["Entailment", "Contradiction", "Neutral"])
    [record] = calibrate_records(path)
    assert record["predicted"] == ["Entailment", "Contradiction", "Neutral"]
    assert record["references"][0]["text"].startswith("The [NAME] Tower")
    assert set(_agreement(telemetry)) == {
        ("entailment", "entailment", "true"),
        ("contradiction", "contradiction", "true"),
        ("neutral", "neutral", "true"),
    }


class _Plain(Exporter):
    name = "plain"


class _Failing(Exporter):
    name = "failing"

    def feedback(self, feedback: object) -> None:
        raise RuntimeError("a broken back end")


def test_an_exporter_without_feedback_gets_none_and_a_failing_one_is_counted(
    telemetry: Telemetry,
) -> None:
    with RefCheckMonitor(
        checker=KeywordChecker(),
        placement="thread",
        conflict=None,
        exporters=[_Plain(), _Failing(), telemetry.exporter()],
    ) as monitor:
        _check(monitor, response_id="one")
        assert monitor.feedback("one", True)
        assert monitor.stats.snapshot() == {"errors": {"exporter": 1}}
    # The exporter after the failing one still got the verdict.
    assert sum(p.value for p in telemetry.points(names.FEEDBACK_CLAIMS).values()) == 3


def test_feedback_events_are_log_records_in_the_answers_trace_even_in_span_mode(
    telemetry: Telemetry,
) -> None:
    trace_context = TraceContext(trace_id="ab" * 16, span_id="cd" * 8)
    with RefCheckMonitor(
        checker=KeywordChecker(),
        placement="thread",
        conflict=None,
        exporters=[telemetry.exporter(events="span")],
    ) as monitor:
        _check(monitor, response_id="one", trace_context=trace_context)
        assert not telemetry.evaluation_records()  # the result's events went to its span
        assert monitor.feedback("one", ["Entailment", None, "Neutral"])
    records = telemetry.evaluation_records()
    assert len(records) == 2
    assert {format(r.log_record.trace_id, "032x") for r in records} == {trace_context.trace_id}
