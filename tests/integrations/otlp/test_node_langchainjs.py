"""Any language: a LangChain.js app (node_app/, its packages installed by `make node-app` from
its package-lock.json) traced by OpenInference's JavaScript instrumentation exports OTLP/HTTP
protobuf (chunked, as Node's exporter sends it) to `refcheck collect`; its planted
contradiction comes back as a Contradiction record on the app's trace."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from otlp_export import traces_done, wait_for
from required import skip_or_fail
from results import ResultSink
from telemetry import Telemetry

from refcheck_callbacks import Label
from refcheck_callbacks.exporters import names
from refcheck_callbacks.integrations.otlp.launch import Receiver

APP = Path(__file__).resolve().parent / "node_app"
QUESTION = "How tall is the Eiffel Tower?"
CONTRADICTING = "The Eiffel Tower is 450 metres tall."

pytestmark = pytest.mark.slow


def test_langchainjs_app_traced_by_openinference(
    receiver: Receiver, telemetry: Telemetry, sink: ResultSink
) -> None:
    node = shutil.which("node")
    if node is None or not (APP / "node_modules" / ".installed").exists():
        skip_or_fail("Node.js and the test app's packages are needed: run `make node-app`")
    env = {
        **os.environ,
        "OTLP_TRACES_URL": f"{receiver.url}/v1/traces",
        "QUESTION": QUESTION,
        "ANSWER": CONTRADICTING,
    }
    run = subprocess.run(
        [node, "app.mjs"], cwd=APP, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    printed = json.loads(run.stdout.strip().splitlines()[-1])
    assert printed["answer"] == CONTRADICTING
    wait_for(traces_done(receiver, 1))
    assert receiver.sink.flush(60)

    [result] = sink.results
    assert result.request.question == QUESTION
    assert result.request.answer == CONTRADICTING
    assert [r.text for r in result.request.references] == [
        "The Eiffel Tower in Paris is 330 metres tall; it was built in 1887-1889."
    ]
    assert [v.label for v in result.verdicts] == [Label.CONTRADICTION]
    [claim] = [
        r
        for r in telemetry.evaluation_records()
        if r.log_record.attributes[names.GEN_AI_EVALUATION_NAME] == names.CLAIM_EVALUATION
    ]
    assert claim.log_record.attributes[names.GEN_AI_EVALUATION_SCORE_LABEL] == "contradiction"
    assert format(claim.log_record.trace_id, "032x") == printed["trace_id"]
    evaluation = telemetry.span(names.EVALUATION_SPAN)
    assert evaluation.parent is not None
    assert format(evaluation.parent.span_id, "016x") == printed["span_id"]
