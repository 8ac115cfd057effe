"""The reader's synthetic claims: each kind makes the edit it names, with its kind's label."""

from __future__ import annotations

import random
import re

import pytest
from linear_time import assert_linear_time

from refcheck_callbacks.training.synthetic_pairs import (
    CONFLICTING_KINDS,
    EDITS,
    KIND_LABELS,
    NOT_STATED_KINDS,
    SUPPORTED_KINDS,
    Sentence,
    names_in,
    synthetic_claim,
)
from refcheck_callbacks.types import Label

BRIDGE = Sentence(
    text=(
        "In 1932 the Harbour Bridge (a steel arch) was finally opened by Jack Lang and Philip "
        "Game, and it carried 120 cars on a sunny Monday in March."
    ),
    following="It is painted grey.",
    other="Ferries also run near Circular Quay in Sydney every day.",
    other_names=["Circular Quay", "Sydney"],
)
MUSEUM = Sentence(
    text="The museum is not open on red days in the northern district.",
    following=None,
    other="",
    other_names=[],
)


def _edit(kind: str, sentence: Sentence = BRIDGE, seed: int = 3) -> str:
    claim = EDITS[kind](sentence, random.Random(seed))
    assert claim is not None, kind
    return claim


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d+", text)


def test_every_kind_has_the_label_of_its_group() -> None:
    assert set(EDITS) == set(SUPPORTED_KINDS) | set(CONFLICTING_KINDS) | set(NOT_STATED_KINDS)
    assert {KIND_LABELS[k] for k in SUPPORTED_KINDS} == {Label.ENTAILMENT}
    assert {KIND_LABELS[k] for k in CONFLICTING_KINDS} == {Label.CONTRADICTION}
    assert {KIND_LABELS[k] for k in NOT_STATED_KINDS} == {Label.NEUTRAL}


def test_supported_kinds_keep_only_what_the_sentence_states() -> None:
    assert _edit("sentence") == BRIDGE.text
    assert _edit("clause") == (
        "In 1932 the Harbour Bridge (a steel arch) was finally opened by Jack Lang and Philip Game."
    )
    assert _edit("merged").endswith("in March; It is painted grey.")
    assert "(a steel arch)" not in _edit("modifier_dropped")
    assert EDITS["merged"](MUSEUM, random.Random(0)) is None  # no next sentence


def test_a_figure_moves_by_at_most_thirty_percent_and_the_year_stays() -> None:
    for seed in range(20):
        edited = _edit("figure", seed=seed)
        year, cars = _numbers(edited)[:2]
        assert year == "1932"
        assert cars != "120" and 84 <= int(cars) <= 156


def test_a_date_moves_to_its_neighbour() -> None:
    seen = {_edit("date", seed=seed) for seed in range(30)}
    assert BRIDGE.text not in seen
    assert any("1931" in text or "1933" in text for text in seen)
    assert any("Tuesday" in text or "Sunday" in text for text in seen)
    assert any(" April." in text or " February." in text for text in seen)
    assert not any(" 1940" in text or "October" in text for text in seen)


def test_names_are_replaced_from_other_documents_or_swapped() -> None:
    replaced = _edit("name")
    assert "Circular Quay" in replaced or "Sydney" in replaced
    swapped = _edit("swapped_roles")
    assert sorted(names_in(swapped)) == sorted(names_in(BRIDGE.text))
    assert swapped != BRIDGE.text


def test_negation_antonym_and_exclusive_values_conflict() -> None:
    assert " was not finally opened" in _edit("negation")
    assert _edit("negation", MUSEUM) == "The museum is open on red days in the northern district."
    assert "closed" in _edit("antonym", MUSEUM)
    exclusive = _edit("exclusive", MUSEUM, seed=0)
    assert exclusive != MUSEUM.text and "museum is not open" in exclusive


def test_not_stated_kinds_add_what_the_document_does_not_say() -> None:
    added = _edit("added_detail")
    assert added.startswith(BRIDGE.text[:-1]) and added.endswith(("Circular Quay.", "Sydney."))
    assert _edit("other_document") == BRIDGE.other


def test_held_out_kinds_are_never_made_and_a_seed_repeats_its_claims() -> None:
    kept = tuple(k for k in EDITS if k not in ("figure", "date", "name"))
    made = [synthetic_claim(BRIDGE, random.Random(seed), kept) for seed in range(60)]
    assert {m.kind for m in made if m is not None}.isdisjoint({"figure", "date", "name"})
    assert {m.label for m in made if m is not None} == set(Label)
    again = [synthetic_claim(BRIDGE, random.Random(seed), kept) for seed in range(60)]
    assert made == again


@pytest.mark.parametrize("kind", sorted(EDITS))
def test_each_edit_is_linear_in_the_sentence(kind: str) -> None:
    def edit(text: str) -> object:
        sentence = Sentence(" ".join(text.split()), text, text, ["Jack"])
        return EDITS[kind](sentence, random.Random(0))

    hostile = "Aaaa Bbbb 12,345 (x" * 2_000 + "notly " * 2_000 + "a" * 20_000
    assert_linear_time(edit, hostile)
