"""Label and score agree, for every checker family (types.Verdict's score rule, docs/telemetry.md).

Each family runs through a real monitor (so the conflict stage settles its verdicts): the
embedded checker, a tiny NLI model built from a config (3-way, RefChecker's merge; 2-way, max
support), the judge and a cascade against a loopback OpenAI-compatible server, a remote checker
reading a service's reply, and calibration's relabelling.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from scripted_openai_server import Received, Reply, ScriptedOpenAIServer
from tiny_nli import save_model

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.check.calibration.points import DecisionPoints, relabel
from refcheck_callbacks.check.cascade import CascadeChecker, CascadeStage
from refcheck_callbacks.check.conflict.stage import settle
from refcheck_callbacks.check.conflict.stated_facts import StatedFactFinder
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.check.judge.checker import LLMChecker
from refcheck_callbacks.check.nli.checker import NLIChecker
from refcheck_callbacks.check.reader.checker import ReaderChecker
from refcheck_callbacks.check.remote import RemoteChecker
from refcheck_callbacks.llm.client import LLMClient, RetryPolicy
from refcheck_callbacks.types import (
    CharSpan,
    CheckItem,
    Claim,
    ConflictKind,
    Evidence,
    Label,
    Reference,
    Verdict,
)

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION
UNPRICED_MODEL = "openai/scripted-judge"
REFERENCE = (
    "The board voted on Monday to approve the budget. The Eiffel Tower is 330 metres tall. "
    "It was finished in 1889 by the company of Gustave Eiffel. Cats sleep most of the day."
)
CLAIMS = [
    "The board voted on Tuesday to approve the budget.",  # a date conflict
    "The Eiffel Tower is 450 metres tall.",  # a figure conflict
    "The Eiffel Tower was finished in 1889.",
    "Cats sleep most of the day.",
    "The tower was painted green to honour the navy.",
    "Gustave Eiffel was born in Dijon.",
]


def assert_coherent(verdict: Verdict) -> None:
    """The score rule: plain floats; the label's probability is the largest of the three and
    is the confidence; a Contradiction's P(entailment) is below the support threshold (1/2)."""
    assert verdict.label is not None, verdict.error
    assert type(verdict.confidence) is float
    assert verdict.probabilities is not None
    assert all(type(p) is float for p in verdict.probabilities.values())
    assert all(type(e.probability) is float for e in verdict.evidence if e.probability is not None)
    own = verdict.probabilities[verdict.label]
    assert own >= max(verdict.probabilities.values()) - 1e-12, verdict  # ties at a cap
    assert verdict.confidence == own
    if verdict.label is C:
        assert verdict.probabilities[E] < 0.5, verdict


def check_all(monitor: RefCheckMonitor, claims: list[str] = CLAIMS) -> list[Verdict]:
    result = monitor.check(
        answer=" ".join(claims), references=[REFERENCE], claims=[Claim(text=c) for c in claims]
    )
    return list(result.verdicts)


def test_a_verdict_refuses_scores_that_disagree_with_its_label_and_keeps_plain_floats() -> None:
    made = Verdict(
        label=E,
        confidence=np.float64(0.7),
        probabilities={E: np.float64(0.7), N: np.float32(0.3), C: 0.0},
        evidence=[Evidence(reference_index=0, span=CharSpan(start=0, end=1), probability=0.7)],
    )
    assert_coherent(made)
    with pytest.raises(ValidationError, match="not the largest"):
        Verdict(label=E, confidence=0.4, probabilities={E: 0.4, N: 0.6, C: 0.0})
    with pytest.raises(ValidationError, match="not the largest"):
        Verdict(label=C, confidence=0.08, probabilities={E: 0.9, N: 0.02, C: 0.08})
    with pytest.raises(ValidationError, match=r"confidence 0\.3000 is not P"):
        Verdict(label=E, confidence=0.3, probabilities={E: 0.7, N: 0.3, C: 0.0})
    # `rescored` validates, where `model_copy` would not.
    with pytest.raises(ValidationError):
        made.rescored(C, {E: 0.7, N: 0.2, C: 0.1}, conflict=ConflictKind.DATE)
    assert made.rescored(N, {E: 0.2, N: 0.8, C: 0.0}).confidence == 0.8


def test_the_embedded_checkers_date_conflict_carries_a_coherent_score(
    embedded_checker: EmbeddedChecker,
) -> None:
    with RefCheckMonitor(checker=embedded_checker, exporters=[], placement="thread") as monitor:
        verdicts = check_all(monitor)
    for verdict in verdicts:
        assert_coherent(verdict)
        assert verdict.label is E or verdict.probabilities[E] < 0.5  # type: ignore[index]
        assert verdict.label is not E or verdict.probabilities[E] >= 0.5  # type: ignore[index]
    date, figure = verdicts[0], verdicts[1]
    assert (date.label, date.conflict) == (C, ConflictKind.DATE)
    assert (figure.label, figure.conflict) == (C, ConflictKind.VALUE)
    # P(entailment) was 0.909 with confidence 0.079: now at most 0.75 / 1.75, the conflict's
    # P(contradiction) the largest.
    assert date.probabilities is not None and date.probabilities[E] <= 0.75 / 1.75 + 1e-12
    assert date.confidence >= date.probabilities[E] and date.confidence > 0.4
    assert date.evidence[0].probability == date.confidence
    assert verdicts[2].label is E


def test_a_date_conflict_with_one_word_of_context_is_found(
    embedded_checker: EmbeddedChecker,
) -> None:
    """`The vote was on Tuesday.` shares one content word with its reference sentence: that
    word is the whole context, and it is enough (it was Entailment, P(entailment) 0.88)."""
    with RefCheckMonitor(checker=embedded_checker, exporters=[], placement="thread") as monitor:
        result = monitor.check(
            answer="The vote was on Tuesday.", references=["The vote was on Monday."]
        )
    [verdict] = result.verdicts
    assert (verdict.label, verdict.conflict) == (C, ConflictKind.DATE)
    assert_coherent(verdict)


@pytest.fixture(scope="module")
def nli_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("score-rule-nli")
    return {
        "three_way": save_model(
            root / "three", "bert", {0: "contradiction", 1: "neutral", 2: "entailment"}
        ),
        "two_way": save_model(root / "two", "bert", {0: "unsupported", 1: "supported"}),
    }


@pytest.mark.parametrize("model", ["three_way", "two_way"])
def test_nli_verdicts_merged_and_aggregated_agree_with_their_scores(
    nli_models: dict[str, Path], model: str
) -> None:
    checker = NLIChecker(nli_models[model], max_length=96, segment_tokens=16, cache_size=0)
    own = asyncio.run(checker.check(_items(CLAIMS)))
    with RefCheckMonitor(checker=checker, exporters=[], placement="thread") as monitor:
        settled = check_all(monitor)
    for verdict in [*own, *settled]:
        assert_coherent(verdict)
    if model == "three_way":  # its random weights leave the date claim unsupported
        assert settled[0].label is C and settled[0].conflict is ConflictKind.DATE


def test_the_shipped_readers_verdicts_own_and_settled_agree_with_their_scores() -> None:
    reader = ReaderChecker(device="cpu", dtype="int8")
    own = asyncio.run(reader.check(_items(CLAIMS)))
    with RefCheckMonitor(checker=reader, exporters=[], placement="thread") as monitor:
        settled = check_all(monitor)
    for verdict in [*own, *settled]:
        assert_coherent(verdict)
    # Whatever the reader read, the conflict stage names the stated date it conflicts with.
    assert settled[0].label is C and settled[0].conflict is ConflictKind.DATE


def _items(claims: list[str]) -> list[CheckItem]:
    return [
        CheckItem(
            claim=Claim(text=claim),
            references=(Reference(text=REFERENCE),),
            request_id="r",
            claim_index=index,
        )
        for index, claim in enumerate(claims)
    ]


def _judge(server: ScriptedOpenAIServer, **options: object) -> LLMChecker:
    client = LLMClient(UNPRICED_MODEL, server.api_base, "k", retry=RetryPolicy(max_retries=0))
    return LLMChecker(client, joint=False, **options)  # type: ignore[arg-type]


def _labels_by_claim(request: Received) -> Reply:
    """Contradiction for the tower's height and the painting, Entailment for the date, else
    Neutral: the judge's own labels, which the conflict stage then settles."""
    claim = request.prompt.rsplit("Claim 1:", 1)[-1]
    label = "Neutral"
    if "450 metres" in claim or "painted green" in claim:
        label = "Contradiction"
    elif "1889" in claim:
        label = "Entailment"
    return Reply(content=f"Claim 1:\nReasoning: Checked.\nLabel: {label}")


def test_judge_verdicts_voted_and_settled_agree_with_their_scores(
    llm_server: ScriptedOpenAIServer,
) -> None:
    llm_server.respond(_labels_by_claim)
    judge = _judge(llm_server, polls=3)
    for verdict in asyncio.run(judge.check(_items(CLAIMS))):
        assert_coherent(verdict)
    with RefCheckMonitor(checker=judge, exporters=[], placement="thread") as monitor:
        settled = check_all(monitor)
    for verdict in settled:
        assert_coherent(verdict)
    # The judge's Contradiction with a stated conflict cites it; the one without is Neutral.
    assert (settled[1].label, settled[1].conflict) == (C, ConflictKind.VALUE)
    assert settled[4].label is N


def test_a_cascades_verdicts_agree_with_their_scores(
    embedded_checker: EmbeddedChecker, llm_server: ScriptedOpenAIServer
) -> None:
    llm_server.respond(_labels_by_claim)
    cascade = CascadeChecker(
        [CascadeStage(embedded_checker, threshold=0.9, by="confidence"), _judge(llm_server)]
    )
    with RefCheckMonitor(checker=cascade, exporters=[], placement="thread") as monitor:
        verdicts = check_all(monitor)
    assert llm_server.chat_requests()  # the judge decided some
    for verdict in verdicts:
        assert_coherent(verdict)


def test_a_remote_checker_refuses_a_reply_whose_scores_disagree_with_its_label(
    llm_server: ScriptedOpenAIServer,
) -> None:
    incoherent = (
        '{"label": "contradiction", "confidence": 0.079, "probabilities": '
        '{"entailment": 0.909, "neutral": 0.012, "contradiction": 0.079}}'
    )
    body = f'{{"checker": "scripted", "verdicts": [{incoherent}]}}'.encode()
    llm_server.respond(lambda received: Reply(raw=body))
    [verdict] = asyncio.run(RemoteChecker(llm_server.url).check(_items(CLAIMS[:1])))
    assert verdict.label is None and "(bad_reply)" in (verdict.error or "")
    assert "not the largest" in (verdict.error or "")


@pytest.mark.parametrize("threshold", [0.0, 0.2, 0.4, 0.5, 0.6, 0.8, 1.0])
def test_calibrated_verdicts_agree_with_their_scores_and_keep_their_order(
    threshold: float,
) -> None:
    supports = [i / 20 for i in range(21)]
    verdicts = [
        Verdict(label=E, confidence=s, probabilities={E: s, N: 1 - s, C: 0.0})
        if s >= 0.5
        else Verdict(label=N, confidence=1 - s, probabilities={E: s, N: 1 - s, C: 0.0})
        for s in supports
    ]
    points = DecisionPoints(support_threshold=threshold)
    relabelled = [relabel(v, points, 0.5) for v in verdicts]
    for verdict, support in zip(relabelled, supports, strict=True):
        assert_coherent(verdict)
        assert (verdict.label is E) == (support >= threshold)
    scores = [v.probabilities[E] for v in relabelled]  # type: ignore[index]
    assert scores == sorted(scores)  # the ranking (AUROC) is the checker's own


def test_a_verdict_without_probabilities_is_settled_coherently() -> None:
    """A checker's Neutral of low confidence and no probabilities reads as P(entailment) 0.7;
    the conflict stage still settles it as a Neutral below 1/2, not a failed request."""
    unsure = Verdict(label=N, confidence=0.3)
    items = _items(["Cats sleep most of the night."])
    [settled] = asyncio.run(settle(StatedFactFinder(), items, [unsure]))
    assert settled.label is N
    assert_coherent(settled)
