"""placement="process": the thread's results, checked by a spawned child process.

The app keeps its requests (metadata, trace context) and redacts before anything crosses; the
child builds its components from a spec or a picklable factory.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from child_components import EchoChecker
from results import ResultSink
from scripted_checkers import KeywordChecker
from telemetry import Telemetry

from refcheck_callbacks import (
    CheckResult,
    ComponentSpecError,
    Outcome,
    Placement,
    PlacementError,
    RedactionError,
    RefCheckError,
    RefCheckMonitor,
)
from refcheck_callbacks.exporters import names

HELPERS = Path(__file__).resolve().parents[1] / "helpers"

REFERENCES = [
    "The Eiffel Tower is 330 metres tall. It was completed in 1889 for the World's Fair.",
    "Gustave Eiffel's company built the tower. It stands on the Champ de Mars in Paris.",
]
ANSWERS = [
    "The Eiffel Tower is 330 metres tall.",
    "The tower was completed in 1889. It stands in Paris.",
    "The Eiffel Tower is 500 metres tall and was finished in 1925.",
    "The tower was designed by Leonardo da Vinci.",
    "Gustave Eiffel's company built it, and it stands on the Champ de Mars.",
    "I cannot say.",
    "",
    "The tower is supported. The tower is contradicted. Nothing here explodes in Paris.",
]


def _run(**options: Any) -> list[CheckResult]:
    """The results of ANSWERS (and one without references), in order."""
    sink = ResultSink()
    with RefCheckMonitor(exporters=[], on_result=sink, batch_size=4, **options) as monitor:
        for index, answer in enumerate(ANSWERS):
            monitor.submit(answer=answer, references=REFERENCES, metadata={"index": index})
        monitor.submit(answer="No references here.", references=[], metadata={"index": 99})
        assert monitor.flush(timeout=120)
    return sorted(sink.results, key=lambda r: r.request.metadata["index"])


def _findings(result: CheckResult) -> dict[str, Any]:
    """What a result says about its answer (not when, nor where)."""
    return result.model_dump(
        exclude={
            "request": {"request_id", "submitted_at"},
            "timings": True,
            "stage_started": True,
            "finished_at": True,
            "placement": True,
        },
        mode="json",
    )


@pytest.fixture(scope="module")
def embedded_in_thread() -> list[CheckResult]:
    return _run(checker="embedded", placement="thread")


def test_the_embedded_checker_in_a_child_gives_the_threads_results(
    embedded_in_thread: list[CheckResult],
) -> None:
    in_child = _run(checker="embedded", placement="process")
    assert [_findings(r) for r in in_child] == [_findings(r) for r in embedded_in_thread]
    assert {r.outcome for r in in_child} >= {Outcome.CHECKED, Outcome.EMPTY_ANSWER}
    assert {r.placement for r in in_child if r.outcome is Outcome.CHECKED} == {Placement.PROCESS}
    assert {r.placement for r in embedded_in_thread if r.outcome is Outcome.CHECKED} == {
        Placement.THREAD
    }


@pytest.mark.parametrize(
    "checker", ["py:scripted_checkers:KeywordChecker", KeywordChecker], ids=["spec", "factory"]
)
def test_a_scripted_checker_from_a_spec_or_a_factory_gives_the_threads_results(
    checker: object,
) -> None:
    in_thread = _run(checker=KeywordChecker())
    in_child = _run(checker=checker, placement="process")
    assert [_findings(r) for r in in_child] == [_findings(r) for r in in_thread]
    # The raising claim failed its own request only, in the child as in the thread.
    assert in_child[-2].outcome is Outcome.ERROR
    assert sum(r.outcome is Outcome.CHECKED for r in in_child) >= 5


def test_the_apps_span_parents_the_evaluation_and_metadata_stays_in_the_app(
    telemetry: Telemetry,
) -> None:
    sink = ResultSink()
    app_tracer = telemetry.tracer_provider.get_tracer("app")
    with RefCheckMonitor(
        checker=EchoChecker,
        placement="process",
        exporters=[telemetry.exporter()],
        on_result=sink,
    ) as monitor:
        with app_tracer.start_as_current_span("app request") as app:
            monitor.submit(
                answer="The tower is 330 metres tall.",
                references=[{"text": REFERENCES[0], "metadata": {"source": "wiki"}}],
                metadata={"user": "u-1"},
            )
        assert monitor.flush(timeout=60)
    [result] = sink.results
    assert result.placement is Placement.PROCESS
    assert result.request.metadata == {"user": "u-1"}
    assert result.request.references[0].metadata == {"source": "wiki"}
    seen = json.loads(result.verdicts[0].explanation or "")
    assert seen["references"] == [[REFERENCES[0], {}]], "metadata must not reach the child"
    evaluation = telemetry.span(names.EVALUATION_SPAN)
    assert (evaluation.attributes or {})[names.CHECKER_PLACEMENT] == "process"
    assert evaluation.parent is not None
    assert evaluation.parent.span_id == app.get_span_context().span_id
    assert evaluation.context.trace_id == app.get_span_context().trace_id


def test_redaction_runs_in_the_app_before_anything_reaches_the_child() -> None:
    calls = []

    def redact(text: str) -> str:  # a closure with state: it could not be pickled
        calls.append(text)
        return text.replace("4111-1111", "[card]")

    sink = ResultSink()
    with RefCheckMonitor(
        checker=EchoChecker, placement="process", redact=redact, exporters=[], on_result=sink
    ) as monitor:
        result = monitor.check(
            question="Which card is 4111-1111?",
            answer="The card 4111-1111 was charged.",
            references=["Card 4111-1111 was charged on Monday."],
        )
    assert calls, "the hook ran in the app's process"
    assert result.outcome is Outcome.CHECKED
    seen = json.loads(result.verdicts[0].explanation or "")
    assert "4111" not in json.dumps(seen)
    assert "[card]" in seen["claim"] and "[card]" in seen["references"][0][0]
    assert "4111" not in result.request.answer + result.request.references[0].text
    assert result.timings["redact"] >= 0.0 and "redact" in result.stage_started


def test_a_failing_redact_hook_ends_the_request_in_the_app() -> None:
    def redact(text: str) -> str:
        raise ValueError("no")

    with RefCheckMonitor(
        checker=EchoChecker, placement="process", redact=redact, exporters=[]
    ) as monitor:
        result = monitor.check(answer="The card 4111-1111 was charged.", references=["Card."])
    assert result.outcome is Outcome.ERROR and result.error_type == RedactionError.__name__
    assert result.verdicts == () and result.claims == (), "nothing was sent to be checked"
    assert "4111" not in result.request.answer, "fails closed: the text is withheld"
    assert result.placement is Placement.PROCESS


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"checker": KeywordChecker()}, "not a built KeywordChecker"),
        ({"checker": lambda: KeywordChecker()}, "cannot be pickled"),
        ({"checker": KeywordChecker, "placement": "service"}, "RemoteChecker"),
        ({"checker": KeywordChecker, "placement": "cluster"}, "'thread', 'process' or 'service'"),
    ],
    ids=["built", "lambda", "service", "unknown"],
)
def test_what_cannot_run_in_a_child_is_refused_where_the_monitor_is_built(
    options: dict[str, Any], says: str
) -> None:
    placement = options.pop("placement", "process")
    with pytest.raises(PlacementError, match=says) as raised:
        RefCheckMonitor(placement=placement, exporters=[], **options)
    assert isinstance(raised.value, RefCheckError) and isinstance(raised.value, ValueError)


@pytest.fixture
def broken_monitor() -> Iterator[RefCheckMonitor]:
    with RefCheckMonitor(
        checker="py:no_such_module:Checker", placement="process", exporters=[]
    ) as monitor:
        yield monitor


def test_components_that_cannot_be_built_fail_every_request_and_are_not_retried(
    broken_monitor: RefCheckMonitor,
) -> None:
    results = [
        broken_monitor.check(answer=f"Claim {i} is in Paris.", references=["Paris."])
        for i in range(3)
    ]
    assert {r.outcome for r in results} == {Outcome.ERROR}
    assert {r.error_type for r in results} == {ComponentSpecError.__name__}
    assert all("no_such_module" in (r.message or "") for r in results)
    time.sleep(0.5)  # a retry would have started by now
    later = broken_monitor.check(answer="Claim is in Paris.", references=["Paris."])
    assert later.error_type == ComponentSpecError.__name__
    assert broken_monitor.runner.restarts == 0  # type: ignore[attr-defined]
    assert broken_monitor.runner.pid is None  # type: ignore[attr-defined]


def test_a_checker_that_cannot_load_fails_the_childs_start_not_each_call() -> None:
    with RefCheckMonitor(
        checker="py:child_components:UnloadableChecker", placement="process", exporters=[]
    ) as monitor:
        result = monitor.check(answer="Claim is in Paris.", references=["Paris."])
        assert (result.outcome, result.error_type) == (Outcome.ERROR, "FileNotFoundError")
        assert "the model table is missing" in (result.message or "")
        assert monitor.runner.restarts == 0  # type: ignore[attr-defined]


def test_a_factory_the_child_cannot_import_fails_with_a_message_that_says_so() -> None:
    """A class defined in `python -c` (or a notebook) exists only in the app's process."""
    code = (
        "from scripted_checkers import KeywordChecker\n"
        "from refcheck_callbacks import RefCheckMonitor\n"
        "class LocalChecker(KeywordChecker):\n    pass\n"
        "m = RefCheckMonitor(checker=LocalChecker, placement='process', exporters=[])\n"
        "r = m.check(answer='It is in Paris.', references=['Paris.'])\n"
        "print(r.outcome.value, m.runner.restarts, r.message)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(HELPERS)},
    )
    assert out.returncode == 0, out.stderr
    outcome, restarts, message = out.stdout.split(" ", 2)
    assert (outcome, restarts) == ("error", "0")
    assert "LocalChecker" in message and "define them in a module" in message


UNGUARDED_APP = """
import time
from scripted_checkers import KeywordChecker
from refcheck_callbacks import RefCheckMonitor, Tally
started = time.monotonic()
monitor = RefCheckMonitor(checker=KeywordChecker, placement="process", exporters=[])
result = monitor.check(answer="It is in Paris.", references=["Paris."])
print("seconds", time.monotonic() - started)
print("failed", monitor.stats.get(Tally.FAILED, result.error_type))
print("result", result.outcome.value, result.error_type, result.message)
monitor.shutdown()
"""
UNGUARDED_BOUND = 30.0
"""Seconds an app without the main guard waits for its answer to fail: 120 s and a traceback
per try before (issue 26), under a second now; the bound leaves a loaded machine room."""


def test_an_app_without_the_main_guard_fails_at_once_with_one_message_naming_it(
    tmp_path: Path,
) -> None:
    """The checking process imports the app's main module again (spawn): an app that builds
    its monitor at import would run itself in the child. Its requests fail with a
    `PlacementError` naming the guard, logged once; nothing raises in the app."""
    script = tmp_path / "app.py"
    script.write_text(UNGUARDED_APP, encoding="utf-8")
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(HELPERS)},
    )
    assert out.returncode == 0, out.stderr
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    assert float(lines["seconds"]) < UNGUARDED_BOUND
    assert lines["failed"] == "1"
    assert lines["result"].startswith("error PlacementError ")
    assert 'under `if __name__ == "__main__":`' in lines["result"]
    assert str(script) in lines["result"]
    assert "Traceback" not in out.stderr
    assert out.stderr.count("__main__") == 1, out.stderr


def test_acheck_is_answered_by_the_child_too() -> None:
    with RefCheckMonitor(checker=KeywordChecker, placement="process", exporters=[]) as monitor:
        result = asyncio.run(
            monitor.acheck(answer="The tower is in Paris.", references=["It is in Paris."])
        )
        pid = monitor.runner.pid  # type: ignore[attr-defined]
    assert result.outcome is Outcome.CHECKED and result.placement is Placement.PROCESS
    assert pid is not None and pid != os.getpid()
