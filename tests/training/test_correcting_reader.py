"""A reader trained to correct the embedded checker (`reader.prior`): untrained it reads as the
embedded checker, its loss starts from the embedded checker's, trained it overrules a prior the
labels contradict, and its training pairs carry the embedded checker's support logits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.check.reader.checker import ReaderChecker
from refcheck_callbacks.check.reader.inputs import EvidenceRanker
from refcheck_callbacks.check.reader.prior import LOGIT_LIMIT, offset, support_logit
from refcheck_callbacks.training.reader_data import ReaderDataPlan, ReaderExample, build_examples
from refcheck_callbacks.training.reader_model import TINY, export, new_reader
from refcheck_callbacks.training.reader_training import PROGRESS, TrainPlan, train
from refcheck_callbacks.types import CheckItem, Claim, Label, Reference

DOCUMENT = "The Eiffel Tower is in Paris. It was finished in 1889 and is 330 metres tall."
CLAIMS = [
    "The Eiffel Tower is in Paris.",
    "The tower has a restaurant on its top floor.",
    "It was finished in 1889.",
    "Gustave Eiffel's company built it.",
]
PLAN = TrainPlan(base=TINY, epochs=12, batch_size=4, learning_rate=1e-3, corrects_embedded=True)


def _items() -> list[CheckItem]:
    reference = (Reference(text=DOCUMENT, id="doc"),)
    return [
        CheckItem(claim=Claim(text=c), references=reference, request_id="r", claim_index=i)
        for i, c in enumerate(CLAIMS)
    ]


def test_an_untrained_correcting_reader_reads_as_the_embedded_checker(tmp_path: Path) -> None:
    model, tokenizer = new_reader(TINY, corrects_embedded=True)
    folder = export(model, tokenizer, tmp_path / "reader", {"training": PLAN.model_dump()})
    reader = ReaderChecker(folder, device="cpu")
    assert reader.prior is not None
    ours = reader.check_batch(_items())
    embedded = EmbeddedChecker().check_batch(_items())
    for mine, theirs in zip(ours, embedded, strict=True):
        assert mine.probabilities is not None and theirs.probabilities is not None
        expected = 1 / (1 + torch.exp(torch.tensor(-support_logit(
            theirs.probabilities[Label.ENTAILMENT])))).item()  # fmt: skip
        assert mine.probabilities[Label.ENTAILMENT] == pytest.approx(expected, abs=1e-6)
        assert all(type(p) is float for p in mine.probabilities.values())
    assert len({round(v.probabilities[Label.ENTAILMENT], 3) for v in ours if v.probabilities}) > 1


def test_a_plain_reader_takes_no_prior(tmp_path: Path) -> None:
    model, tokenizer = new_reader(TINY)
    folder = export(model, tokenizer, tmp_path / "plain", {"training": {"epochs": 1}})
    assert ReaderChecker(folder, device="cpu").prior is None


def test_the_loss_a_correcting_reader_starts_from_is_the_embedded_checkers(
    tmp_path: Path,
) -> None:
    """With its head at zero, the first step's loss is the cross-entropy of the offset alone:
    the embedded checker's own probabilities of the targets."""
    priors = [2.0, -1.0, 0.5, 3.0]
    targets = [0, 0, 2, 1]
    pairs = [
        ReaderExample(evidence=DOCUMENT, claim=claim, target=target, dataset="tiny",
                      kind="test", prior=prior)
        for claim, target, prior in zip(CLAIMS, targets, priors, strict=True)
    ]  # fmt: skip
    model, tokenizer = new_reader(TINY, corrects_embedded=True)
    plan = PLAN.model_copy(update={"checkpoint_every": 1})
    train(plan, pairs, model, tokenizer, tmp_path, max_steps=1)
    logged = json.loads((tmp_path / PROGRESS).read_text().splitlines()[0])["loss"]
    shifted = torch.tensor([offset(p) for p in priors]).log_softmax(-1)
    expected = -shifted[range(4), targets].mean().item()
    assert logged == pytest.approx(expected, rel=1e-5)


def test_training_overrules_a_prior_the_labels_contradict(tmp_path: Path) -> None:
    """The prior calls every claim supported, the labels say each conflicts: after training the
    offset logits favour contradiction."""
    wrong = 3.0
    pairs = [
        ReaderExample(evidence=DOCUMENT, claim=claim, target=2, dataset="tiny", kind="test",
                      prior=wrong)
        for claim in CLAIMS
    ]  # fmt: skip
    model, tokenizer = new_reader(TINY, corrects_embedded=True)
    fast = PLAN.model_copy(update={"epochs": 40, "learning_rate": 1e-2})
    train(fast, pairs, model, tokenizer, tmp_path / "run")
    encoded = tokenizer([p.evidence for p in pairs], [p.claim for p in pairs],
                        padding=True, return_tensors="pt")  # fmt: skip
    with torch.no_grad():
        read = (model(**encoded).logits + torch.tensor([offset(wrong)] * len(pairs))).softmax(-1)
    assert all(int(row.argmax()) == 2 and row[0] < 0.5 for row in read), read


def test_training_a_correcting_reader_on_pairs_without_priors_is_refused(tmp_path: Path) -> None:
    pair = ReaderExample(evidence=DOCUMENT, claim=CLAIMS[0], target=0, dataset="t", kind="t")
    model, tokenizer = new_reader(TINY, corrects_embedded=True)
    with pytest.raises(ValueError, match="prior"):
        train(PLAN, [pair], model, tokenizer, tmp_path)


@pytest.mark.labelled_data("wice", "begin")
def test_a_correcting_plan_gives_every_pair_the_embedded_checkers_logit(
    shared_data: Path,
) -> None:
    plan = ReaderDataPlan(datasets=("wice", "begin"), labelled_per_set=8, synthetic_per_set=40,
                          corrects_embedded=True)  # fmt: skip
    examples = build_examples(plan, EvidenceRanker(), shared_data)
    priors = [e.prior for e in examples]
    assert all(p is not None and -LOGIT_LIMIT <= p <= LOGIT_LIMIT for p in priors)
    assert len({round(p or 0.0, 3) for p in priors}) > len(priors) // 2
    copies = [e.prior or 0.0 for e in examples if e.kind == "sentence"]
    others = [e.prior or 0.0 for e in examples if e.kind == "other_document"]
    assert copies and others
    # a sentence of the document itself reads as supported, one of another document not
    assert sum(copies) / len(copies) > sum(others) / len(others)
    plain = build_examples(plan.model_copy(update={"corrects_embedded": False}),
                           EvidenceRanker(), shared_data)  # fmt: skip
    assert [e.model_copy(update={"prior": None}) for e in examples] == plain
