"""The reader checker: what it reads, and how its verdicts cite their evidence."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import torch

from refcheck_callbacks.check.cascade import CascadeChecker
from refcheck_callbacks.check.reader.checker import ReaderChecker
from refcheck_callbacks.check.reader.inputs import (
    LABELS,
    EvidenceRanker,
    claim_input,
    evidence_input,
)
from refcheck_callbacks.contract.registry import build_checker
from refcheck_callbacks.engine.pipeline import Pipeline, StageTimeouts
from refcheck_callbacks.extract.sentences import SentenceExtractor
from refcheck_callbacks.training.reader_model import TINY, export, new_reader
from refcheck_callbacks.types import CheckItem, CheckRequest, Claim, ConflictKind, Label, Reference

PAGES = (
    "Canberra is the capital city of Australia. It was chosen in 1908 as a compromise between "
    "Sydney and Melbourne, the two largest cities. Parliament first met there in 1927.",
    "Sydney is the largest city in Australia. Its opera house opened in 1973 on Bennelong "
    "Point. The harbour bridge opened in 1932 and carries rail, road and foot traffic.",
)


@pytest.fixture(scope="module")
def ranker() -> EvidenceRanker:
    return EvidenceRanker()


def _reader_leaning(folder: Path, label: Label) -> Path:
    """A tiny random reader whose head leans to `label`, exported like a trained one."""
    model, tokenizer = new_reader(TINY)
    index = {name: i for i, name in LABELS.items()}[label.value]
    with torch.no_grad():
        model.classifier.bias.zero_()
        model.classifier.bias[index] = 4.0
    return export(model, tokenizer, folder, {"test": f"leans to {label.value}"})


@pytest.fixture(scope="module")
def conflicting(tmp_path_factory: pytest.TempPathFactory, ranker: EvidenceRanker) -> ReaderChecker:
    folder = _reader_leaning(tmp_path_factory.mktemp("reader"), Label.CONTRADICTION)
    return ReaderChecker(folder, device="cpu", dtype="float32", ranker=ranker)


def _item(claim: str, question: str | None = None) -> CheckItem:
    return CheckItem(
        claim=Claim(text=claim),
        references=tuple(Reference(text=t, id=f"page-{i}") for i, t in enumerate(PAGES)),
        question=question,
        request_id="r",
        claim_index=0,
    )


def test_a_short_claim_is_read_with_its_question() -> None:
    question = "What is the capital of Australia?"
    assert claim_input("Sydney.", question) == "What is the capital of Australia? Sydney."
    long_claim = "The capital of Australia is the city of Sydney in New South Wales."
    assert claim_input(long_claim, question) == long_claim
    assert claim_input("Sydney.", None) == "Sydney."


def test_the_evidence_is_the_embedded_checkers_best_segments(ranker: EvidenceRanker) -> None:
    best = ranker.best("Parliament first met in Canberra in 1927.", ranker.prepare(PAGES))
    assert 1 <= len(best) <= 3
    assert "Parliament first met there in 1927" in best[0].text
    assert evidence_input(best).startswith(" ".join(best[0].text.split()))


def test_a_contradiction_cites_the_segment_read_as_most_conflicting(
    conflicting: ReaderChecker, ranker: EvidenceRanker
) -> None:
    item = _item("The opera house on Bennelong Point opened in 1927.")
    verdict = conflicting.check_batch([item])[0]
    assert verdict.label is Label.CONTRADICTION and verdict.probabilities is not None
    assert verdict.probabilities[Label.ENTAILMENT] < conflicting.support_threshold
    assert verdict.confidence == max(verdict.probabilities.values())
    segments = ranker.best(item.claim.text, ranker.prepare(PAGES))
    alone = conflicting.reader.classify_pairs(
        [evidence_input([s]) for s in segments], [item.claim.text] * len(segments)
    )
    most = segments[max(range(len(segments)), key=lambda i: alone[i][Label.CONTRADICTION])]
    assert most != segments[0]  # the claim's best-ranked segment is not the one cited
    (cited,) = verdict.evidence
    assert (cited.reference_index, cited.span.start, cited.span.end) == (
        most.reference_index, most.start, most.end,
    )  # fmt: skip


def test_the_pipeline_keeps_a_sure_reader_contradiction_citing_a_reference_sentence(
    conflicting: ReaderChecker,
) -> None:
    pipeline = Pipeline(SentenceExtractor(), conflicting, timeouts=StageTimeouts(check=60.0))
    claim = "The opera house in Canberra opened in 1927."
    request = CheckRequest(
        answer=claim,
        claims=[Claim(text=claim)],
        references=[Reference(text=t, id=f"page-{i}") for i, t in enumerate(PAGES)],
    )
    (result,) = asyncio.run(pipeline.run([request]))
    (verdict,) = result.verdicts
    assert verdict.label is Label.CONTRADICTION and verdict.conflict is not None
    (cited,) = verdict.evidence
    sentence = PAGES[cited.reference_index][cited.span.start : cited.span.end]
    assert sentence.endswith(".") and len(sentence.split()) < 20


def test_a_reference_free_claim_is_neutral_without_reading(conflicting: ReaderChecker) -> None:
    item = CheckItem(claim=Claim(text="Anything."), references=(), request_id="r", claim_index=0)
    (verdict,) = conflicting.check_batch([item])
    assert verdict.label is Label.NEUTRAL and verdict.evidence == ()


def test_the_reader_is_a_cascade_stage_behind_the_embedded_checker(
    conflicting: ReaderChecker,
) -> None:
    folder = conflicting.model_name
    cascade = build_checker(f"cascade:embedded[margin,0.5]>reader:{folder}")
    assert isinstance(cascade, CascadeChecker)
    assert [name for name, _ in cascade.stages] == ["embedded", "reader"]
    (verdict,) = asyncio.run(cascade.check([_item("Sydney has an opera house on the moon.")]))
    assert [stage.stage for stage in verdict.stages] == ["embedded", "reader"]


def test_a_stated_conflict_overrules_the_readers_entailment(
    tmp_path: Path, ranker: EvidenceRanker
) -> None:
    """A reader that reads everything as supported still says Contradiction where the
    references state the claim's date otherwise, citing that statement."""
    folder = _reader_leaning(tmp_path / "reader", Label.ENTAILMENT)
    reader = ReaderChecker(folder, device="cpu", dtype="float32", ranker=ranker)
    stated, unstated = reader.check_batch(
        [_item("Parliament first met in Canberra in 1931."), _item("Canberra is the capital.")]
    )
    assert unstated.label is Label.ENTAILMENT
    assert stated.label is Label.CONTRADICTION and stated.conflict is ConflictKind.DATE
    assert stated.probabilities is not None
    assert stated.probabilities[Label.ENTAILMENT] < reader.support_threshold
    (cited,) = stated.evidence
    assert "1927" in PAGES[cited.reference_index][cited.span.start : cited.span.end]


def test_on_a_cpu_the_reader_runs_in_int8_unless_told_otherwise(
    conflicting: ReaderChecker, ranker: EvidenceRanker
) -> None:
    folder = conflicting.model_name
    assert ReaderChecker(folder, device="cpu", ranker=ranker).reader.dtype == torch.qint8
    assert conflicting.reader.dtype == torch.float32  # dtype="float32" asked
