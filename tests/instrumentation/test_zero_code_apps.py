"""A LangChain app and a LlamaIndex app with no refcheck code, checked under
`opentelemetry-instrument` from environment variables alone.

Each app (tests/helpers/zero_code/) is run as a user would run it: `opentelemetry-instrument
python app.py` in a subprocess, the SDK's console exporters chosen by `OTEL_*` variables, the
checker the default (embedded) in the default placement (a checking process). The apps are
scripts without an `if __name__ == "__main__":` guard, as most scripts are. The SDK is set up
by `opentelemetry-distro` (the `instrument` extra), as it is for a user.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ZERO_CODE = Path(__file__).resolve().parents[1] / "helpers" / "zero_code"
INSTRUMENT = Path(sys.executable).with_name("opentelemetry-instrument")

pytestmark = pytest.mark.slow


class Run:
    """What one instrumented run printed: the app's lines, and the exporters' JSON records."""

    def __init__(self, done: subprocess.CompletedProcess[str]) -> None:
        self.returncode = done.returncode
        self.stderr = done.stderr
        self.lines: list[str] = []
        self.records: list[dict[str, Any]] = []
        decoder, text, at = json.JSONDecoder(), done.stdout, 0
        while at < len(text):
            if text[at].isspace():
                at += 1
            elif text[at] == "{":
                record, at = decoder.raw_decode(text, at)
                self.records.append(record)
            else:
                end = text.find("\n", at)
                end = len(text) if end < 0 else end
                self.lines.append(text[at:end])
                at = end

    @property
    def trace_id(self) -> str:
        (line,) = [line for line in self.lines if line.startswith("trace ")]
        return "0x" + line.split()[1]

    def evaluations(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("event_name") == "gen_ai.evaluation.result"]

    def spans(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("name") == name and "context" in r]


def instrumented(app: str, tmp_path: Path, **variables: str) -> Run:
    # The app runs from a folder of its own: nothing of the tests is importable there.
    shutil.copy(ZERO_CODE / app, tmp_path / app)
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("OTEL_", "REFCHECK_")) and name != "PYTHONPATH"
    }
    env.update(
        OTEL_TRACES_EXPORTER="console",
        OTEL_LOGS_EXPORTER="console",
        OTEL_METRICS_EXPORTER="none",
        # A script cannot flush: the monitor's exit hook finishes its work within this.
        REFCHECK_EXIT_TIMEOUT="120",
        **variables,
    )
    done = subprocess.run(
        [str(INSTRUMENT), sys.executable, app],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    return Run(done)


@pytest.mark.parametrize("app", ["langchain_app.py", "llamaindex_app.py"])
def test_an_app_with_no_refcheck_code_gets_evaluations_on_its_trace(
    app: str, tmp_path: Path
) -> None:
    assert "refcheck_callbacks" not in (ZERO_CODE / app).read_text(encoding="utf-8")
    run = instrumented(app, tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    # One `trace` line: the checking process did not run the unguarded script again.
    assert [line.split()[0] for line in run.lines] == ["trace", "answer"], run.lines
    evaluations = run.evaluations()
    by_name = {r["attributes"]["gen_ai.evaluation.name"]: r for r in evaluations}
    assert set(by_name) == {"refcheck.claim", "refcheck.response", "relevance"}, run.stderr[-3000:]
    assert {r["trace_id"] for r in evaluations} == {run.trace_id}
    # 450 metres against the document's 330: a contradiction, found in a checking process.
    assert by_name["refcheck.claim"]["attributes"]["gen_ai.evaluation.score.label"] == (
        "contradiction"
    )
    (span,) = run.spans("evaluate refcheck")
    assert span["context"]["trace_id"] == run.trace_id
    assert span["attributes"]["refcheck.checker.placement"] == "process"
    assert "Traceback" not in run.stderr


def test_disabled_instrumentations_turn_ours_off(tmp_path: Path) -> None:
    run = instrumented(
        "langchain_app.py", tmp_path, OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="refcheck_langchain"
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.spans("answer question"), "the app's own tracing goes on"
    assert run.evaluations() == [] and run.spans("evaluate refcheck") == []


def test_a_bad_variable_is_said_at_start_and_the_app_runs_on(tmp_path: Path) -> None:
    run = instrumented("llamaindex_app.py", tmp_path, REFCHECK_SAMPLE_RATE="all")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "REFCHECK_SAMPLE_RATE='all' cannot be used: accepted: a number from 0 to 1" in (
        run.stderr
    )
    assert [line.split()[0] for line in run.lines] == ["trace", "answer"]
    assert run.spans("answer question") and run.evaluations() == []
