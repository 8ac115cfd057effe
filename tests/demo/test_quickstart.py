"""The packaged quickstart: its examples ship as package data and check offline as planted."""

from __future__ import annotations

import pytest

from refcheck_callbacks.demo.examples import load_examples
from refcheck_callbacks.demo.quickstart import check_directly


def test_the_examples_ship_with_the_package() -> None:
    examples = load_examples()
    assert len(examples) >= 3
    for example in examples:
        assert example["question"] and example["answer"]
        assert all(ref["id"] and ref["text"] for ref in example["references"])


def test_checking_directly_prints_the_planted_errors(capsys: pytest.CaptureFixture[str]) -> None:
    check_directly()
    out = capsys.readouterr().out
    assert out.count("\nQ: ") == len(load_examples())
    height = next(line for line in out.splitlines() if "450 metres tall" in line)
    assert "contradiction" in height and "[wiki-eiffel]" in height
    assert "outcome=abstain" in out  # the example whose answer holds no claim
