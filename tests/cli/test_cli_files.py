"""`refcheck extract | check | extract-check` as a user runs them: a subprocess on real files.

The output is checked against the fields RefChecker documents for `refchecker-cli`
(README "Command Line Interface"): every input field kept, `claims` added by extraction, `ys`
(one label per claim) and `Y` (a label for strict / major, ratios for soft) added by checking.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from refcheck_callbacks.cli.main import main

RC_LABELS = {"Entailment", "Neutral", "Contradiction"}


class RefCheckerOutput(BaseModel):
    """RefChecker's documented output record; extra (input) fields are allowed."""

    model_config = ConfigDict(extra="allow")

    response: str
    claims: list[str | list[str]]
    ys: list[str | None]
    Y: str | dict[str, float]


def refcheck(*args: str | Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "refcheck_callbacks.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def refcheck_here(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    """The same command in this process: no interpreter start, for the quicker cases."""
    status = main([str(a) for a in args])
    return status, capsys.readouterr().err


def _check_schema(record: dict[str, Any], aggregator: str) -> RefCheckerOutput:
    output = RefCheckerOutput.model_validate(record)
    assert len(output.ys) == len(output.claims)
    assert set(output.ys) <= RC_LABELS
    if aggregator == "soft":
        assert isinstance(output.Y, dict)
        assert set(output.Y) == RC_LABELS | {"Abstain"}
        assert sum(output.Y.values()) == pytest.approx(1.0)
    else:
        assert output.Y in RC_LABELS | {"Abstain"}
    ours = record["refcheck"]
    assert len(ours["claims"]) == len(output.claims)
    for claim, label in zip(ours["claims"], output.ys, strict=True):
        assert claim["label"] == label
        assert 0.0 <= claim["confidence"] <= 1.0
        assert claim["probabilities"][label] == pytest.approx(claim["confidence"])
        assert claim["evidence"], "every checked claim names its evidence"
    return output


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.mark.labelled_data("refchecker_annotations")
def test_extract_check_on_refcheckers_own_example(shared_data: Path, tmp_path: Path) -> None:
    source = shared_data / "refchecker_annotations" / "cli_example_in.json"
    out = tmp_path / "out.json"
    run = refcheck("extract-check", "--input_path", source, "--output_path", out)
    assert run.returncode == 0, run.stderr
    inputs = json.loads(source.read_text(encoding="utf-8"))
    outputs = json.loads(out.read_text(encoding="utf-8"))
    assert len(outputs) == len(inputs)
    for index, (given, record) in enumerate(zip(inputs, outputs, strict=True)):
        for key, value in given.items():
            assert record[key] == value, f"input field {key!r} must be written back unchanged"
        output = _check_schema(record, "soft")
        assert output.claims, "each example response states something checkable"
        assert record["refcheck"]["index"] == index
        for claim, detail in zip(output.claims, record["refcheck"]["claims"], strict=True):
            assert isinstance(claim, str) and claim in given["response"]
            evidence = detail["evidence"][0]
            assert evidence["text"] == given["reference"][evidence["start"] : evidence["end"]]
    # RefChecker's first example credits the song to Chuck Berry; the reference says otherwise.
    assert outputs[0]["Y"]["Entailment"] < 1.0
    assert not (tmp_path / "out.json.partial.jsonl").exists()


def test_check_given_claims_and_triplets_with_strict_and_major(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = [
        "The Eiffel Tower is 330 metres tall.",
        "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
    ]
    record = {
        "id": "eiffel-1",
        "response": "The Eiffel Tower, finished in 1925, is 330 metres tall.",
        "question": "Tell me about the Eiffel Tower.",
        "reference": reference,
        "claims": [
            ["Eiffel Tower", "height", "330 metres"],
            "The Eiffel Tower was completed in 1925.",
            ["Eiffel Tower", "is located in", "Paris"],
        ],
    }
    source = tmp_path / "claims.json"
    source.write_text(json.dumps([record]), encoding="utf-8")
    labels = {}
    for aggregator in ("strict", "major"):
        out = tmp_path / f"{aggregator}.json"
        status, stderr = refcheck_here(
            capsys, "check", "--input", source, "--output", out, "--aggregator", aggregator
        )
        assert status == 0, stderr
        [result] = json.loads(out.read_text(encoding="utf-8"))
        output = _check_schema(result, aggregator)
        assert output.claims == record["claims"], "`check` keeps the given claims as given"
        assert result["id"] == "eiffel-1"
        assert result["refcheck"]["claims"][0]["text"] == "Eiffel Tower height 330 metres"
        assert output.ys[1] != "Entailment", "1925 is not what the reference says"
        labels[aggregator] = output
    assert labels["strict"].ys == labels["major"].ys
    assert labels["strict"].Y in {"Neutral", "Contradiction"}


def test_extract_writes_claims_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.jsonl"
    lines = [
        {"response": "Paris is the capital of France. It has 2.1 million inhabitants."},
        {"response": "I'm sorry, I cannot answer that."},
    ]
    source.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    status, stderr = refcheck_here(capsys, "extract", "--input", source, "--output", out)
    assert status == 0, stderr
    first, refusal = _jsonl(out)
    assert first["claims"] == [
        "Paris is the capital of France.",
        "Paris has 2.1 million inhabitants.",  # the pronoun takes the subject before it
    ]
    assert refusal["claims"] == [], "a refusal holds no claim (RefChecker's Abstain)"
    assert "ys" not in first and "Y" not in first


def test_bad_records_are_reported_by_index_and_skipped(tmp_path: Path) -> None:
    good = {"response": "Water boils at 100 degrees Celsius at sea level.",
            "reference": "At sea level, water boils at 100 degrees Celsius."}  # fmt: skip
    lines = [
        json.dumps(good),
        '{"response": "cut off',  # not JSON
        json.dumps({"question": "no response field", "reference": "text"}),
        json.dumps({**good, "reference": 42}),  # a reference must be text or a list of texts
        json.dumps(["not", "an", "object"]),
        json.dumps({"response": "No reference to check against."}),
        json.dumps({**good, "response": ""}),  # empty answer: a defined outcome, not an error
        json.dumps(good),
    ]
    source = tmp_path / "mixed.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    run = refcheck("extract-check", "--input", source, "--output", out, "--aggregator", "strict")
    assert run.returncode == 3, run.stderr
    for index, reason in [
        (1, "line 2 is not valid JSON"),
        (2, "response: Field required"),
        (3, "reference"),
        (4, "must be a JSON object"),
        (5, "'reference' is required"),
    ]:
        [line] = [x for x in run.stderr.splitlines() if f"record {index} skipped:" in x]
        assert reason in line
    assert "5 skipped: records 1, 2, 3, 4, 5" in run.stderr
    records = _jsonl(out)
    assert [r["refcheck"]["index"] for r in records] == [0, 6, 7]
    assert records[1]["refcheck"]["outcome"] == "empty_answer"
    assert (records[1]["claims"], records[1]["ys"], records[1]["Y"]) == ([], [], "Abstain")
    assert records[0]["Y"] == records[2]["Y"] == "Entailment"


def _generated(path: Path, count: int) -> list[dict[str, Any]]:
    records = [
        {
            "id": n,
            "response": f"Station {n} recorded {n + 10} millimetres of rain on Monday.",
            "reference": f"On Monday, station {n} recorded {n + 10} millimetres of rain.",
        }
        for n in range(count)
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return records


def _wait_for_lines(path: Path, count: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if path.exists() and path.read_text(encoding="utf-8").count("\n") >= count:
            return
        time.sleep(0.02)
    pytest.fail("the run did not write its first records in time")


def _start(*args: str | Path) -> subprocess.Popen[str]:
    # A child inherits an ignored SIGINT (pytest run as a background job ignores it) and its
    # Python then raises no KeyboardInterrupt; a caught signal is reset to default by exec.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "refcheck_callbacks.cli", *map(str, args), "--batch-size", "1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.slow
def test_an_interrupted_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    source = tmp_path / "big.jsonl"
    records = _generated(source, 1500)
    out = tmp_path / "out.jsonl"
    process = _start("extract-check", "--input", source, "--output", out)
    _wait_for_lines(out, 3, process)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "--resume" in stderr
    kept = _jsonl(out)
    assert 3 <= len(kept) < len(records)
    # A crash mid-write leaves half a line; resuming must repair it, not choke on it.
    with out.open("a", encoding="utf-8") as handle:
        handle.write('{"id": 999, "respo')

    run = refcheck("extract-check", "--input", source, "--output", out, "--resume")
    assert run.returncode == 0, run.stderr
    assert f"({len(kept)} kept from the earlier run)" in run.stderr
    final = _jsonl(out)
    assert [r["refcheck"]["index"] for r in final] == list(range(len(records)))
    assert [r["id"] for r in final] == [r["id"] for r in records]
    assert final[: len(kept)] == kept, "records of the first run are kept, not redone"


@pytest.mark.slow
def test_a_killed_json_run_resumes_from_its_partial_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "big.json"
    records = _generated(tmp_path / "big.jsonl", 1000)
    source.write_text(json.dumps(records), encoding="utf-8")
    out = tmp_path / "out.json"
    partial = tmp_path / "out.json.partial.jsonl"
    process = _start("extract-check", "--input", source, "--output", out, "--no-progress")
    _wait_for_lines(partial, 2, process)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=60)
    assert not out.exists(), "a JSON output appears only once it is complete"

    run = refcheck("extract-check", "--input", source, "--output", out, "--resume")
    assert run.returncode == 0, run.stderr
    final = json.loads(out.read_text(encoding="utf-8"))
    assert [r["id"] for r in final] == [r["id"] for r in records]
    assert not partial.exists()
    # Resuming a finished run has nothing left to do and keeps the result.
    status, stderr = refcheck_here(
        capsys, "extract-check", "--input", source, "--output", out, "--resume"
    )
    assert status == 0, stderr
    assert f"0 records written to {out} ({len(records)} kept" in stderr
    assert json.loads(out.read_text(encoding="utf-8")) == final


def test_concurrent_batches_write_the_same_records_in_input_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.jsonl"
    records = _generated(source, 23)
    outputs = {}
    for concurrency in ("1", "4"):
        out = tmp_path / f"out-{concurrency}.jsonl"
        status, stderr = refcheck_here(
            capsys, "extract-check", "--input", source, "--output", out, "--batch-size", "2",
            "--concurrency", concurrency, "--no-progress",
        )  # fmt: skip
        assert status == 0, stderr
        outputs[concurrency] = _jsonl(out)
    assert [r["id"] for r in outputs["4"]] == [r["id"] for r in records]
    assert [(r["ys"], r["Y"]) for r in outputs["4"]] == [(r["ys"], r["Y"]) for r in outputs["1"]]


def test_resuming_against_a_changed_input_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.jsonl"
    records = _generated(source, 5)
    out = tmp_path / "out.jsonl"
    assert refcheck_here(capsys, "extract", "--input", source, "--output", out)[0] == 0
    assert all(len(r["refcheck"]["input_hash"]) == 16 for r in _jsonl(out))
    records[2]["response"] = "A different answer altogether."
    source.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    status, stderr = refcheck_here(
        capsys, "extract", "--input", source, "--output", out, "--resume"
    )
    assert status == 2
    assert "record 2 of the input differs" in stderr
    assert len(_jsonl(out)) == 5, "the earlier results are left as they were"


def test_text_is_repaired_noted_and_written_as_valid_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.jsonl"
    reference = "At sea level, water boils at 100 degrees Celsius."
    # A lone surrogate escape is valid JSON but not valid Unicode text; "é" must survive.
    claim = "Water boils at 100 degrees \\ud800 at sea level, café."
    lines = [
        f'{{"response": "{claim}", "reference": "{reference}", "claims": ["{claim}"]}}',
        json.dumps({"response": "x", "reference": "r", "claims": ["fine", "  "]}),
        json.dumps({"response": "x", "reference": "r", "claims": [["only", "two"]]}),
    ]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    status, stderr = refcheck_here(capsys, "check", "--input", source, "--output", out)
    assert status == 3, stderr
    assert "record 1 skipped: claims: Value error, claim 1 is empty" in stderr
    assert "record 2 skipped: claims: Value error, claim 0 is a list of 2 items" in stderr
    raw = out.read_text(encoding="utf-8")
    assert raw.isascii(), "written ASCII-escaped, as RefChecker's json.dump does"
    [record] = _jsonl(out)
    assert record["response"].endswith("café.")
    assert any("surrogate" in note for note in record["refcheck"]["notes"])
    assert record["ys"] and record["refcheck"]["outcome"] == "checked"


WATER = {
    "response": "Water boils at 100 degrees Celsius at sea level.",
    "reference": "At sea level, water boils at 100 degrees Celsius.",
}


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_record_that_is_not_utf8_is_skipped_and_the_rest_are_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    records = [json.dumps(WATER, ensure_ascii=False).encode("utf-8")] * 3
    # One byte that is not UTF-8 inside a string of the middle record; "é" elsewhere is fine.
    records[1] = records[1].replace(b"Celsius at", b"Celsius \xff at")
    records[2] = records[2].replace(b"Celsius at", "Celsius (café) at".encode())
    source = tmp_path / f"in{suffix}"
    if suffix == ".jsonl":
        source.write_bytes(b"\n".join(records) + b"\n")
    else:
        source.write_bytes(b"[\n" + b",\n".join(records) + b"\n]\n")
    out = tmp_path / f"out{suffix}"
    status, stderr = refcheck_here(capsys, "extract-check", "--input", source, "--output", out)
    assert status == 3, stderr
    [line] = [x for x in stderr.splitlines() if "record 1 skipped:" in x]
    assert "not valid UTF-8 (byte 0xff" in line
    written = _jsonl(out) if suffix == ".jsonl" else json.loads(out.read_text(encoding="utf-8"))
    assert [r["refcheck"]["index"] for r in written] == [0, 2]
    assert "café" in written[1]["response"]
    assert all(r["refcheck"]["outcome"] == "checked" for r in written)


def test_a_record_nested_past_the_json_parser_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(
        "\n".join([json.dumps(WATER), "[" * 100_000 + "]" * 100_000, json.dumps(WATER)]) + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    status, stderr = refcheck_here(capsys, "extract-check", "--input", source, "--output", out)
    assert status == 3, stderr
    assert "record 1 skipped: line 2 is not valid JSON: it nests" in stderr
    assert [r["refcheck"]["index"] for r in _jsonl(out)] == [0, 2]


def test_check_writes_retrieval_diagnostics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tower = "The Eiffel Tower in Paris was completed in 1889 for the World's Fair."
    records = [
        {
            "response": "The Eiffel Tower was completed in 1889. It was completed in 1925.",
            "question": "When was the Eiffel Tower completed?",
            "reference": ["Bananas are rich in potassium.", tower],
            "claims": ["The Eiffel Tower was completed in 1889.", "It was completed in 1925."],
        },
        {
            "response": "The Eiffel Tower was completed in 1889.",
            "reference": [tower],
            "claims": ["The Eiffel Tower was completed in 1889.", "The tower is painted green."],
        },
    ]
    source, out = tmp_path / "in.json", tmp_path / "out.json"
    source.write_text(json.dumps(records), encoding="utf-8")
    status, stderr = refcheck_here(capsys, "check", "--input", source, "--output", out)
    assert status == 0, stderr
    asked, unasked = (record["refcheck"] for record in json.loads(out.read_text("utf-8")))
    bananas, tower_use = asked["references"]
    assert (bananas["index"], tower_use["index"]) == (0, 1)
    assert bananas["relevance"] < 0.5 < tower_use["relevance"]
    assert (bananas["used"], tower_use["used"]) == (False, True)
    assert 0.5 < asked["answer_relevance"] <= 1.0
    supported, conflicting = asked["claims"]
    assert supported["cause"] is None and 0.5 < supported["relevance"] <= 1.0
    assert conflicting["cause"] == "contradicted"
    # No question: no relevance, but use and causes all the same.
    assert unasked["references"] == [{"index": 0, "relevance": None, "used": True}]
    assert unasked["answer_relevance"] is None
    assert [claim["relevance"] for claim in unasked["claims"]] == [None, None]
    assert unasked["claims"][0]["cause"] is None
    assert unasked["claims"][1]["cause"] in {"retrieval_missed", "unsupported_by_relevant_context"}
