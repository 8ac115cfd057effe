"""A person's label and when the checker agrees with it: the same three-way label, or the
same side of "supported" for true / false; no agreement where the checker gave no label."""

from __future__ import annotations

import pytest

from refcheck_callbacks.contract.feedback import FeedbackLabel
from refcheck_callbacks.types import Label

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION


@pytest.mark.parametrize(
    ("given", "label"),
    [
        ("Entailment", FeedbackLabel.ENTAILMENT),
        (" neutral ", FeedbackLabel.NEUTRAL),
        ("CONTRADICTION", FeedbackLabel.CONTRADICTION),
        (Label.CONTRADICTION, FeedbackLabel.CONTRADICTION),
        (True, FeedbackLabel.SUPPORTED),
        (False, FeedbackLabel.UNSUPPORTED),
    ],
)
def test_a_label_is_one_of_the_three_or_a_boolean(given: object, label: FeedbackLabel) -> None:
    assert FeedbackLabel.of(given) is label


@pytest.mark.parametrize("given", ["supported", "yes", "", 1, 0.5, None, ["Entailment"]])
def test_anything_else_is_refused_with_what_to_give(given: object) -> None:
    with pytest.raises(ValueError, match="Entailment, Neutral, Contradiction"):
        FeedbackLabel.of(given)


def test_agreement() -> None:
    table = {
        label: [label.agrees(predicted) for predicted in (E, N, C, None)] for label in FeedbackLabel
    }
    assert table == {
        FeedbackLabel.ENTAILMENT: [True, False, False, None],
        FeedbackLabel.NEUTRAL: [False, True, False, None],
        FeedbackLabel.CONTRADICTION: [False, False, True, None],
        FeedbackLabel.SUPPORTED: [True, False, False, None],
        FeedbackLabel.UNSUPPORTED: [False, True, True, None],
    }
