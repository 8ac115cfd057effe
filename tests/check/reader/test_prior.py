"""The correcting reader's offset: a reader with no opinion reads as the embedded checker, and
its own reading moves the embedded checker's probability the way it reads."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from refcheck_callbacks.check.reader.prior import (
    LOGIT_LIMIT,
    TRAINING_FILE,
    corrected,
    corrects_embedded,
    support_logit,
)
from refcheck_callbacks.types import Label

UNDECIDED = {Label.ENTAILMENT: 1 / 3, Label.NEUTRAL: 1 / 3, Label.CONTRADICTION: 1 / 3}


@pytest.mark.parametrize("entailment", [0.02, 0.3, 0.5, 0.77, 0.97])
def test_a_reader_with_no_opinion_gives_the_embedded_checkers_probability(
    entailment: float,
) -> None:
    out = corrected(UNDECIDED, support_logit(entailment))
    assert out[Label.ENTAILMENT] == pytest.approx(entailment, abs=1e-9)
    assert out[Label.NEUTRAL] == pytest.approx(out[Label.CONTRADICTION])
    assert sum(out.values()) == pytest.approx(1.0)
    assert all(type(p) is float for p in out.values())


def test_the_readers_own_reading_moves_the_embedded_probability_its_way() -> None:
    prior = support_logit(0.8)
    conflicting = {Label.ENTAILMENT: 0.05, Label.NEUTRAL: 0.15, Label.CONTRADICTION: 0.8}
    supported = {Label.ENTAILMENT: 0.9, Label.NEUTRAL: 0.05, Label.CONTRADICTION: 0.05}
    down, up = corrected(conflicting, prior), corrected(supported, prior)
    assert down[Label.ENTAILMENT] < 0.5 < 0.8 < up[Label.ENTAILMENT]
    assert max(down, key=down.__getitem__) is Label.CONTRADICTION


def test_support_logits_are_clipped_and_none_is_no_opinion() -> None:
    assert support_logit(None) == 0.0
    assert support_logit(1.0) == LOGIT_LIMIT and support_logit(0.0) == -LOGIT_LIMIT
    assert support_logit(0.5) == 0.0
    assert support_logit(0.9) == pytest.approx(math.log(9))


def test_a_folder_says_whether_its_reader_corrects_the_embedded_checker(tmp_path: Path) -> None:
    assert not corrects_embedded(tmp_path)  # no training file: a plain reader
    (tmp_path / TRAINING_FILE).write_text(json.dumps({"training": {"corrects_embedded": True}}))
    assert corrects_embedded(tmp_path)
    (tmp_path / TRAINING_FILE).write_text(json.dumps({"training": {"epochs": 1}}))
    assert not corrects_embedded(tmp_path)
