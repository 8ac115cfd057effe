"""The loaders read every shared set as it is, map labels as documented, and keep groups whole."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from refcheck_callbacks.bench.data_dir import DATA_DIR_ENV, data_dir
from refcheck_callbacks.bench.datasets import DATASET_NAMES, LabelledExample, load_dataset
from refcheck_callbacks.errors import DatasetUnavailableError
from refcheck_callbacks.types import Label

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION

# (examples, supported, unsupported) as counted from the files and the README's label tallies.
EXPECTED_COUNTS = {
    "climate_fever": (7675, 1943, 5732),
    "wice": (349, 115, 234),
    "expertqa": (741, 534, 207),
    "begin": (767, 239, 528),
    "faithdial": (343, 90, 253),
    "summedits": (3661, 1312, 2349),
    "faithbench": (800, 238, 562),
}


@pytest.fixture(scope="module")
def every_set(shared_data: Path) -> dict[str, list[LabelledExample]]:
    return {name: load_dataset(name, shared_data) for name in DATASET_NAMES}


def test_every_set_loads_with_the_expected_counts(
    every_set: dict[str, list[LabelledExample]],
) -> None:
    assert set(every_set) == set(EXPECTED_COUNTS)
    for name, examples in every_set.items():
        supported = Counter(example.supported for example in examples)
        assert (len(examples), supported[True], supported[False]) == EXPECTED_COUNTS[name], name
        assert all(example.dataset == name for example in examples)
        assert all(example.claim and example.references for example in examples), name
        assert all(all(ref.strip() for ref in example.references) for example in examples)
        ids = [example.example_id for example in examples]
        assert len(set(ids)) == len(ids), f"{name}: example ids are not unique"


def test_climate_fever_keeps_its_three_labels_per_pair(
    every_set: dict[str, list[LabelledExample]],
) -> None:
    examples = every_set["climate_fever"]
    assert Counter(example.label for example in examples) == {N: 4930, E: 1943, C: 802}
    assert {example.source_label for example in examples if example.label is C} == {"REFUTES"}
    # The five evidences of one claim are five pairs of one response, in one group.
    by_claim = defaultdict(list)
    for example in examples:
        by_claim[example.response_id].append(example)
    assert len(by_claim) == 1535
    assert all(len(pairs) == 5 for pairs in by_claim.values())
    assert all(len({pair.group for pair in pairs}) == 1 for pairs in by_claim.values())
    assert all(len(example.references) == 1 for example in examples)


def test_wice_maps_partial_and_unsupported_to_neutral(
    every_set: dict[str, list[LabelledExample]],
) -> None:
    examples = every_set["wice"]
    mapping = {(example.source_label, example.label) for example in examples}
    assert mapping == {
        ("supported", E),
        ("partially_supported", N),
        ("not_supported", N),
    }
    assert Counter(example.source_label for example in examples) == {
        "partially_supported": 191,
        "supported": 115,
        "not_supported": 43,
    }
    assert all(example.supported == (example.label is E) for example in examples)


def test_expertqa_drops_url_only_evidence_and_citation_markers(
    every_set: dict[str, list[LabelledExample]],
) -> None:
    examples = every_set["expertqa"]
    assert all(example.label is None for example in examples)
    assert not any(re.search(r"\[\d+\]", example.claim) for example in examples)
    header = re.compile(r"\[\d+\]\s*https?://")
    assert not any(header.match(ref) for ex in examples for ref in ex.references)
    assert {example.source_label for example in examples} == {
        "Complete",
        "Partial",
        "Incomplete",
    }, "claims judged Missing come without a passage and are skipped"
    assert all(example.supported == (example.source_label == "Complete") for example in examples)
    # Claims of one answer share the response id and the question's group.
    by_response = defaultdict(set)
    for example in examples:
        by_response[example.response_id].add(example.group)
    assert all(len(groups) == 1 for groups in by_response.values())


def test_dialogue_sets_skip_responses_without_a_claim(
    every_set: dict[str, list[LabelledExample]],
) -> None:
    assert {ex.source_label for ex in every_set["begin"]} == {
        "Fully attributable",
        "Not fully attributable",
    }
    assert {ex.source_label for ex in every_set["faithdial"]} == {
        "Entailment",
        "Hallucination",
        "Partial Hallucination",
    }
    faithbench = every_set["faithbench"]
    benign = [ex for ex in faithbench if ex.source_label == "Benign"]
    questionable = [ex for ex in faithbench if ex.source_label == "Questionable"]
    assert benign and all(ex.supported for ex in benign)
    assert questionable and not any(ex.supported for ex in questionable)


def test_a_reference_text_never_spans_two_groups(
    every_set: dict[str, list[LabelledExample]],
) -> None:
    groups_of_reference: dict[str, set[str]] = defaultdict(set)
    for name in ("wice", "begin", "faithdial", "summedits", "faithbench"):
        for example in every_set[name]:
            for reference in example.references:
                groups_of_reference[" ".join(reference.lower().split())].add(example.group)
    assert all(len(groups) == 1 for groups in groups_of_reference.values())
    # Edited summaries of one document form one group: 123 documents in SummEdits.
    assert len({example.group for example in every_set["summedits"]}) == 123


def test_knowledge_shared_by_two_sets_is_one_group(
    every_set: dict[str, list[LabelledExample]],
) -> None:
    begin = {" ".join(ex.references[0].lower().split()): ex.group for ex in every_set["begin"]}
    shared = [
        (ex.group, begin[key])
        for ex in every_set["faithdial"]
        if (key := " ".join(ex.references[0].lower().split())) in begin
    ]
    assert all(left == right for left, right in shared)


def test_limit_keeps_the_first_examples(shared_data: Path) -> None:
    full = load_dataset("begin", shared_data)
    assert load_dataset("begin", shared_data, limit=7) == full[:7]


@pytest.mark.labelled_data("wice")
def test_the_data_dir_comes_from_the_environment(
    shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(shared_data))
    assert data_dir() == shared_data
    assert len(load_dataset("wice", limit=3)) == 3


def test_without_the_variable_the_data_lives_in_the_users_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert data_dir() == tmp_path / "refcheck" / "data"


def test_a_missing_set_says_how_to_download_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    with pytest.raises(DatasetUnavailableError) as raised:
        load_dataset("wice")
    message = str(raised.value)
    assert f"wice is not in {tmp_path}" in message
    assert "refcheck data download --dataset wice" in message


def test_sets_that_cannot_be_checked_say_why(tmp_path: Path) -> None:
    with pytest.raises(DatasetUnavailableError, match="no reference texts"):
        load_dataset("refchecker_annotations", tmp_path)
    with pytest.raises(DatasetUnavailableError, match="choose one of"):
        load_dataset("squad", tmp_path)
