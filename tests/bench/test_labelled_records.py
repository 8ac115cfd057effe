"""`bench.labelled_records`: the labelled answers `refcheck calibrate` reads, bad ones named."""

from __future__ import annotations

import json
from pathlib import Path

from refcheck_callbacks.bench.labelled_records import read_labelled_records
from refcheck_callbacks.types import Label

GOOD = {
    "response_id": "r1",
    "question": "How tall is the tower?",
    "response": "It is 330 m tall. It opened in 1889.",
    "references": [{"id": "d1", "text": "The tower is 330 metres tall."}],
    "claims": ["The tower is 330 m tall.", ["tower", "opened in", "1889"], "Unlabelled."],
    "labels": ["entailment", False, None],
    "checker": "embedded",
    "predicted": ["Entailment", "Neutral", "Neutral"],
}


def test_every_shape_of_references_and_labels_is_read(tmp_path: Path) -> None:
    records = [
        GOOD,
        {
            "context": "Water boils at 100 C.",
            "claims": ["Water boils at 90 C."],
            "labels": ["CONTRADICTION"],
        },
        {"reference": ["A.", "B is C."], "claims": ["B is C."], "labels": [True]},
        {"references": ["Plain passage."], "claims": ["Plain."], "labels": ["Neutral"]},
    ]
    path = tmp_path / "labelled.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    read = read_labelled_records(path)
    assert read.problems == [] and read.records == 4
    first, second = read.examples[:2]
    assert (first.label, first.supported, first.response_id) == (Label.ENTAILMENT, True, "r1")
    assert (second.label, second.supported, second.claim) == (None, False, "tower opened in 1889")
    assert first.references == ["The tower is 330 metres tall."]
    assert len(read.examples) == 5  # the unlabelled claim is left out
    assert read.examples[2].label is Label.CONTRADICTION
    assert read.examples[2].group == "record 2"  # no response_id: the record is the response
    assert read.examples[3].references == ["A.", "B is C."]


def test_bad_lines_are_named_by_line_and_skipped(tmp_path: Path) -> None:
    lines = [
        json.dumps(GOOD),
        "{not json",
        "",
        json.dumps([1, 2]),
        json.dumps({**GOOD, "labels": ["Entailment"]}),
        json.dumps({**GOOD, "labels": ["Entailment", "maybe", None]}),
        json.dumps({**GOOD, "references": [], "reference": None}),
        json.dumps({**GOOD, "claims": ["ok", ["a", "b"], "c"]}),
        json.dumps({"claims": "x", "labels": "y", "context": "z"}),
        json.dumps({**GOOD, "response_id": "r2"}),
    ]
    path = tmp_path / "labelled.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    read = read_labelled_records(path)
    assert read.records == 2 and len(read.examples) == 4
    where = [problem.split(": ", 1)[0] for problem in read.problems]
    assert where == [f"{path}, line {n}" for n in (2, 4, 5, 6, 7, 8, 9)]
    text = "\n".join(read.problems)
    assert "not JSON" in text and "JSON object, not list" in text
    assert "'labels' has 1 entries for 3 claims" in text
    assert "label 1 is 'maybe'" in text
    assert "no reference text" in text
    assert "a triplet has 3" in text


def test_a_broken_json_list_is_one_problem_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "labelled.json"
    path.write_bytes(b'[{"claims": ["a"], \xff')
    read = read_labelled_records(path)
    assert read.examples == [] and len(read.problems) == 1
    assert "not a JSON list" in read.problems[0]
