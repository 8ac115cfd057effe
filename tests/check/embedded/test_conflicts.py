"""Stated-fact conflicts: a differing figure, date or name in the same place is found; an
absent one, a converted one, or one stated in a better-matching sentence is not."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from refcheck_callbacks.check.embedded.conflicts import find_conflict
from refcheck_callbacks.check.embedded.reference_sentences import parse_references
from refcheck_callbacks.types import ConflictKind

VALUE, DATE, ENTITY = ConflictKind.VALUE, ConflictKind.DATE, ConflictKind.ENTITY

EIFFEL = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
    "It is named after the engineer Gustave Eiffel, whose company designed and built the tower "
    "from 1887 to 1889. The tower is 330 metres tall, about the same height as an 81-storey "
    "building. It was the entrance arch to the 1889 World's Fair."
)


def test_the_readme_example_is_a_conflict_on_the_figure_in_its_sentence() -> None:
    reference = "The tower is 330 metres tall."
    conflict = find_conflict("The Eiffel Tower is 450 metres tall.", parse_references([reference]))
    assert conflict is not None
    assert (conflict.kind, conflict.claim_text, conflict.reference_text) == (
        VALUE,
        "450 metres",
        "330 metres",
    )
    assert (conflict.reference_index, reference[conflict.start : conflict.end]) == (0, reference)


@pytest.mark.parametrize(
    ("claim", "kind"),
    [
        ("The tower is 450 metres tall.", VALUE),
        ("The tower is 1,500 feet tall.", VALUE),  # converted, and still different
        ("Gustave Eiffel's company built the tower from 1901 to 1903.", DATE),
        ("It is named after the engineer Maurice Koechlin.", ENTITY),
        ("It was the entrance arch to the 1925 World's Fair.", DATE),
        ("The tower stands on the Champ de Mars in Lyon, France.", ENTITY),
    ],
)
def test_a_differing_fact_about_the_same_thing_is_a_conflict(
    claim: str, kind: ConflictKind
) -> None:
    conflict = find_conflict(claim, parse_references(["Painting takes 60 tonnes.", EIFFEL]))
    assert conflict is not None and conflict.kind == kind
    assert conflict.reference_index == 1


@pytest.mark.parametrize(
    "claim",
    [
        "The tower is 330 metres tall.",
        "The tower is 1,083 feet tall.",  # a conversion of the stated height
        "The tower is about 325 metres tall.",  # a hedged, close figure
        "The tower was built in 1888.",  # within the stated years
        "It is named after Eiffel.",  # part of the stated name
        "The tower has 1,665 steps.",  # a figure the reference does not state: absent
        "The tower was designed by a team of engineers.",  # no figure or name to differ
        "The tower is not 450 metres tall.",  # negated where the reference is not
        "The Louvre is 450 metres long.",  # another subject: nothing in the same place
    ],
)
def test_a_stated_absent_or_unrelated_fact_is_no_conflict(claim: str) -> None:
    assert find_conflict(claim, parse_references([EIFFEL])) is None


def test_a_better_matching_sentence_that_states_the_value_wins() -> None:
    references = [
        "When it opened, the tower was 312 metres tall.",
        "Since its antennas were added, the tower is 330 metres tall today.",
    ]
    parsed = parse_references(references)
    assert find_conflict("The tower is 330 metres tall today.", parsed) is None
    conflict = find_conflict("The tower is 350 metres tall today.", parsed)
    assert conflict is not None and conflict.reference_text == "330 metres"


def test_every_sentence_of_a_claim_is_read_with_the_subject_before_it() -> None:
    claim = "The Eiffel tower stands in Paris. It is 500 metres tall."
    conflict = find_conflict(claim, parse_references([EIFFEL]))
    assert conflict is not None and conflict.claim_text == "500 metres"
    consistent = "It stands in Paris. It is 330 metres tall."
    assert find_conflict(consistent, parse_references([EIFFEL])) is None


def test_empty_and_figure_free_texts_have_no_conflict() -> None:
    assert find_conflict("", parse_references([EIFFEL])) is None
    assert find_conflict("The tower is 450 metres tall.", parse_references([])) is None
    assert find_conflict("The tower is 450 metres tall.", parse_references(["", " "])) is None


MARATHON = (
    "The Berlin Marathon is held every year in late September. In 2018 Eliud Kipchoge won it "
    "in 2 hours 1 minute 39 seconds, a world record at the time. The course is 42.195 "
    "kilometres long and starts near the Brandenburg Gate. About 45,000 runners took part, "
    "and the organisers raised 1.2 million euros for charity. The race was first run on "
    "13 October 1974, when 286 runners finished."
)


@pytest.mark.parametrize(
    ("claim", "kind"),
    [
        ("The course is 36 kilometres long.", VALUE),  # a unit, another value
        ("The course is 30 miles long.", VALUE),  # another unit, converted: 48.3 km
        ("In 2018 Eliud Kipchoge won it in 3 hours.", VALUE),
        ("The organisers raised 4 million euros for charity.", VALUE),
        ("The race was first run in 1981.", DATE),
        ("The race was first run on 13 June 1974.", DATE),
        ("In 2018 Haile Gebrselassie won it, a world record at the time.", ENTITY),
        ("The course starts near the Reichstag building.", ENTITY),
    ],
)
def test_hand_written_edits_of_another_text_are_conflicts(claim: str, kind: ConflictKind) -> None:
    """Edits the shared data never saw: the rule, not a list of cases."""
    conflict = find_conflict(claim, parse_references([MARATHON]))
    assert conflict is not None and conflict.kind == kind, conflict


@pytest.mark.parametrize(
    "claim",
    [
        "The course is 42.2 km long.",  # rounded and abbreviated
        "The course is about 26 miles long.",  # hedged conversion
        "Around 45,000 runners took part.",
        "Kipchoge won the 2018 race.",  # part of the stated name
        "The race was first run in October 1974.",
        "The race is sponsored by a bank.",  # nothing to differ
        "The winner received 40,000 euros.",  # a figure the text does not state
    ],
)
def test_hand_written_restatements_of_another_text_are_no_conflicts(claim: str) -> None:
    assert find_conflict(claim, parse_references([MARATHON])) is None


def test_a_sentence_that_states_the_claims_value_is_not_read_against_it() -> None:
    """The dateline's day is another fact: the sentence also states the claim's day."""
    reference = "By Jane Doe, May 10, 2018. The naturalist died on May 7 in Calgary, Alberta."
    claim = "The naturalist died in Calgary, Alberta on May 7, 2018."
    assert find_conflict(claim, parse_references([reference])) is None


def test_a_capitalised_word_after_a_colon_opens_a_clause_and_is_no_name() -> None:
    reference = "Review sessions: Rather than cramming, short and regular sessions work best."
    claim = "Review sessions: Plan short and regular sessions, which work best."
    assert find_conflict(claim, parse_references([reference])) is None


def test_two_names_of_one_sentence_swapped_are_a_conflict() -> None:
    """The claim's name is stated, but elsewhere: in the claim's place stands another."""
    reference = "The new bridge links Windsor to Detroit, according to a survey by Marcus Bell."
    references = parse_references([reference])
    conflict = find_conflict("The new bridge links Marcus Bell to Detroit.", references)
    assert conflict is not None
    assert (conflict.claim_text, conflict.reference_text) == ("Marcus Bell", "Windsor")
    assert find_conflict("The new bridge links Windsor to Detroit.", references) is None
    assert find_conflict("The survey was written by Marcus Bell.", references) is None


def test_a_name_described_by_another_next_to_it_is_no_swap() -> None:
    reference = "The league is run by Toronto-based lawyer Dana Whitfield, who founded it in 2009."
    claim = "The league is run by Dana Whitfield, who founded it in 2009."
    assert find_conflict(claim, parse_references([reference])) is None


@pytest.mark.parametrize(
    ("claim", "reference"),
    [
        (
            "The 2015 El Nino was declared by NOAA scientists.",
            "The 2015 El Niño was declared by NOAA scientists in March.",
        ),
        (
            "Beyonce performed at the Sao Paulo stadium in 2013.",
            "Beyoncé performed at the São Paulo stadium in 2013.",
        ),
        ("The study was led by Muller in Zurich.", "The study was led by Müller in Zürich."),
        ("The study was led by MÜLLER in Zürich.", "The study was led by Muller in Zurich."),
    ],
)
def test_a_name_written_with_or_without_its_accents_is_the_same_name(
    claim: str, reference: str
) -> None:
    assert find_conflict(claim, parse_references([reference])) is None


def test_a_different_name_written_with_accents_is_still_a_conflict() -> None:
    reference = "Beyoncé performed at the São Paulo stadium in 2013."
    conflict = find_conflict(
        "Beyonce performed at the Rio stadium in 2013.", parse_references([reference])
    )
    assert conflict is not None
    assert (conflict.claim_text, conflict.reference_text) == ("Rio", "São Paulo")


def test_a_name_whose_family_name_the_references_hold_is_mentioned() -> None:
    # `Neel` is nowhere in the page, `Mukherjee` is: the name is mentioned, so another name
    # next to one of its words ("Booker ... shortlisted") is another role, not a swap.
    references = parse_references(
        ["The Booker jury shortlisted the novel in 2016. Mukherjee, its author, lives in London."]
    )
    assert find_conflict("Neel Mukherjee's novel was shortlisted in 2016.", references) is None
    assert find_conflict("Neel Mukherjee's novel was shortlisted in 2011.", references) is not None


RANK = """
import json
from refcheck_callbacks.check.embedded.reference_sentences import parse_references
page = " ".join(
    f"The {a} report of {b} counted {c} stations and {d} sensors."
    for a, b, c, d in zip(
        "annual quarterly weekly daily monthly".split(),
        "Oslo Bergen Tromso Bodo Alta".split(),
        "north south east west central".split(),
        "coastal alpine urban rural arctic".split(),
    )
)
words = {"annual", "report", "oslo", "counted", "north", "station", "coastal", "sensor"}
print(json.dumps([score.hex() for score, _ in parse_references([page]).ranked(words)]))
"""


def test_match_scores_are_the_same_whatever_the_hash_seed() -> None:
    # A set's order follows PYTHONHASHSEED; a float sum in another order can differ in its
    # last bit and break a near-tie the other way in another process.
    scores = {
        json.dumps(
            json.loads(
                subprocess.run(
                    [sys.executable, "-c", RANK],
                    env={**os.environ, "PYTHONHASHSEED": str(seed)},
                    capture_output=True,
                    text=True,
                    timeout=60,
                    check=True,
                ).stdout
            )
        )
        for seed in range(8)
    }
    assert len(scores) == 1, scores
