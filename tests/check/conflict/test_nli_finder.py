"""Model checkers through the conflict stage: a binary MiniCheck's unsupported claims become
Contradictions citing the conflicting span; a 3-way NLI model can serve as the finder.

Tiny checkpoints built from a config: a MiniCheck-RoBERTa whose head is set to say
"unsupported" (as the real model does of a changed figure, date or name), and a 3-way MiniLM
NLI model whose head is set to say "contradiction"."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tiny_models import save_classifier
from tiny_nli import save_model
from transformers import AutoModelForSequenceClassification

from refcheck_callbacks import ConflictKind, Label, RefCheckMonitor
from refcheck_callbacks.check.conflict.nli import NLIConflictFinder
from refcheck_callbacks.check.nli.checker import NLIChecker

TOWER = (
    "The Eiffel Tower is in Paris. The tower is 330 metres tall. "
    "It was finished in 1889 by the company of Gustave Eiffel."
)
THREE_WAY = {0: "entailment", 1: "neutral", 2: "contradiction"}


def _biased(directory: Path, favoured: int) -> Path:
    """The saved classifier with its output bias set so class `favoured` always wins."""
    model = AutoModelForSequenceClassification.from_pretrained(directory)
    head = model.classifier.out_proj if hasattr(model.classifier, "out_proj") else model.classifier
    with torch.no_grad():
        head.bias.fill_(-20.0)
        head.bias[favoured] = 20.0
    model.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def minicheck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("minicheck")
    return _biased(save_classifier(root / "MiniCheck-RoBERTa-Large", "roberta"), favoured=0)


@pytest.fixture(scope="module")
def nli_contradicting(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("nli")
    return _biased(save_model(root / "tiny-nli", "bert", THREE_WAY), favoured=2)


@pytest.mark.parametrize(
    ("claim", "kind", "cited"),
    [
        ("The tower is 450 metres tall.", ConflictKind.VALUE, "The tower is 330 metres tall."),
        (
            "It was finished in 1895 by the company of Gustave Eiffel.",
            ConflictKind.DATE,
            "It was finished in 1889 by the company of Gustave Eiffel.",
        ),
        (
            "It was finished in 1889 by the company of Le Corbusier.",
            ConflictKind.ENTITY,
            "It was finished in 1889 by the company of Gustave Eiffel.",
        ),
    ],
)
def test_minicheck_gives_a_contradiction_citing_the_conflicting_span(
    minicheck: Path, claim: str, kind: ConflictKind, cited: str
) -> None:
    checker = NLIChecker(minicheck)
    assert checker.scheme.binary  # MiniCheck itself never says Contradiction
    with RefCheckMonitor(checker=checker, exporters=[]) as monitor:
        result = monitor.check(answer=claim, references=[TOWER])
    [verdict] = result.verdicts
    assert (verdict.label, verdict.conflict) == (Label.CONTRADICTION, kind)
    assert result.evidence_text(0) == cited


def test_minicheck_without_a_stated_conflict_stays_neutral(minicheck: Path) -> None:
    with RefCheckMonitor(checker=NLIChecker(minicheck), exporters=[]) as monitor:
        [verdict] = monitor.check(answer="The tower has 1,665 steps.", references=[TOWER]).verdicts
    assert (verdict.label, verdict.conflict) == (Label.NEUTRAL, None)


def test_a_three_way_model_serves_as_the_conflict_finder(
    minicheck: Path, nli_contradicting: Path
) -> None:
    finder = NLIConflictFinder(nli_contradicting)
    with RefCheckMonitor(checker=NLIChecker(minicheck), conflict=finder, exporters=[]) as monitor:
        result = monitor.check(answer="The tower has 1,665 steps.", references=[TOWER])
    [verdict] = result.verdicts
    assert verdict.label is Label.CONTRADICTION
    assert verdict.conflict is ConflictKind.EXCLUSIVE  # no figure, date or name differs
    assert result.evidence_text(0) in TOWER
    assert "NLI model" in (verdict.explanation or "")


def test_a_binary_model_cannot_be_the_conflict_finder(minicheck: Path) -> None:
    with pytest.raises(ValueError, match="needs a 3-way NLI model"):
        NLIConflictFinder(minicheck)


def test_the_conflict_stage_is_named_by_spec(nli_contradicting: Path, minicheck: Path) -> None:
    spec = f"nli:{nli_contradicting}"
    with RefCheckMonitor(checker=NLIChecker(minicheck), conflict=spec, exporters=[]) as monitor:
        assert monitor.pipeline is not None
        assert monitor.pipeline.conflict is not None
        assert monitor.pipeline.conflict.name == spec
