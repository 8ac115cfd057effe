"""Planted edits: one stated fact changed per supported claim, the original kept as control."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from refcheck_callbacks.bench.datasets import LabelledExample, load_dataset
from refcheck_callbacks.bench.planted_edits import planted_examples
from refcheck_callbacks.bench.runner import check_examples
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.cli.main import main
from refcheck_callbacks.support.progress import Progress
from refcheck_callbacks.types import Label

REFERENCE = (
    "The Eiffel Tower was built by the company of Gustave Eiffel from 1887 to 1889. "
    "The tower is 330 metres tall. It was opened in March for the World's Fair in Paris."
)
CLAIMS = [
    "The tower is 330 metres tall.",
    "The Eiffel Tower was built by the company of Gustave Eiffel from 1887 to 1889.",
    "It was opened in March for the World's Fair in Paris.",
    "It is made of wrought iron.",  # no fact to change
    "The tower is tall and was opened in March, said Lyon.",  # Lyon: not in the references
]


def _examples(claims: list[str], supported: bool = True) -> list[LabelledExample]:
    return [
        LabelledExample(
            dataset="hand",
            example_id=f"c{i}",
            group=f"g{i}",
            claim=claim,
            references=[REFERENCE],
            supported=supported,
        )
        for i, claim in enumerate(claims)
    ]


def test_each_edit_changes_one_stated_fact_and_keeps_its_control() -> None:
    pairs = planted_examples(_examples(CLAIMS))
    edits, controls = pairs[0::2], pairs[1::2]
    assert len(edits) == len(controls) >= 3
    for edit, control in zip(edits, controls, strict=True):
        assert edit.label is Label.CONTRADICTION and edit.supported is False
        assert control.label is Label.ENTAILMENT and control.supported is True
        assert control.claim in CLAIMS and edit.claim != control.claim
        assert edit.example_id.startswith(control.example_id.removesuffix("/control"))
        kind, change = edit.source_label.removeprefix("planted ").split(": ", 1)  # type: ignore[union-attr]
        original, replacement = change.split(" -> ")
        assert kind in ("figure", "date", "name")
        assert original in control.claim and original in REFERENCE
        assert edit.claim == control.claim.replace(original, replacement, 1)
        assert replacement not in control.claim
    assert "It is made of wrought iron." not in {c.claim for c in controls}


def test_edits_are_seeded_by_example_and_unsupported_claims_are_left_alone() -> None:
    assert planted_examples(_examples(CLAIMS)) == planted_examples(_examples(CLAIMS))
    assert planted_examples(_examples(CLAIMS, supported=False)) == []


def test_in_context_edits_need_the_claims_words_around_the_fact() -> None:
    claim = "Visitors often say that Paris is lovely in spring."  # Paris, in another relation
    examples = _examples([*CLAIMS, claim])
    edited = {e.claim for e in planted_examples(examples) if e.label is Label.ENTAILMENT}
    assert claim not in edited and edited
    anywhere = planted_examples(examples, in_context=False)
    assert claim in {e.claim for e in anywhere if e.label is Label.ENTAILMENT}


@pytest.mark.slow
def test_bench_runs_planted_sets_from_the_shared_data(shared_data: Path, tmp_path: Path) -> None:
    status = main(
        [
            "bench", "--dataset", "planted:wice", "--dataset", "planted-any:wice",
            "--path", str(shared_data), "--output-dir", str(tmp_path), "--no-progress",
        ]
    )  # fmt: skip
    assert status == 0
    report = json.loads((tmp_path / "bench.json").read_text())
    by_name = {d["dataset"]: d for d in report["datasets"]}
    assert set(by_name) == {"planted:wice", "planted-any:wice"}
    assert by_name["planted-any:wice"]["examples"] > by_name["planted:wice"]["examples"] > 50
    three_way = by_name["planted:wice"]["checkers"][0]["three_way"]
    assert three_way["labels"][0] == "entailment" and "contradiction" in three_way["labels"]


@pytest.mark.slow
def test_the_embedded_checker_reads_planted_edits_as_contradictions(
    shared_data: Path, embedded_checker: EmbeddedChecker
) -> None:
    """BEGIN's planted pairs: most edits come out Contradiction, controls almost never do."""
    pairs = planted_examples(load_dataset("begin", shared_data))
    progress = Progress(len(pairs), "planted", enabled=False)
    verdicts = asyncio.run(check_examples(embedded_checker, pairs, 64, progress))
    labels = [(e.label, v.label if v else None) for e, v in zip(pairs, verdicts, strict=True)]
    edits = [got for gold, got in labels if gold is Label.CONTRADICTION]
    controls = [got for gold, got in labels if gold is Label.ENTAILMENT]
    assert len(edits) == len(controls) > 50
    assert edits.count(Label.CONTRADICTION) / len(edits) >= 0.75  # 0.84 measured
    assert controls.count(Label.CONTRADICTION) / len(controls) <= 0.05  # 0.01 measured


def test_ordinary_capitalised_words_are_not_names_and_weekdays_are_dates() -> None:
    reference = "The department said on Tuesday that the Department of Energy funds Acme Labs."
    claims = ["The Department said on Tuesday that it funds Acme Labs."]
    examples = [
        LabelledExample(
            dataset="hand", example_id=f"d{seed}", group="g", claim=claims[0],
            references=[reference], supported=True,
        )
        for seed in range(12)
    ]  # fmt: skip
    changes = {e.source_label for e in planted_examples(examples)[0::2]}
    assert changes, "some edit is planted"
    for change in changes:
        kind, edit = change.removeprefix("planted ").split(": ", 1)  # type: ignore[union-attr]
        original = edit.split(" -> ")[0]
        assert original != "Department"  # written in lower case too: an ordinary word
        assert (kind == "date") == (original == "Tuesday")
