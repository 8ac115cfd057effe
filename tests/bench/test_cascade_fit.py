"""Fitting cascade thresholds: the replay matches what `CascadeChecker` does, the fit meets its
target, and `refcheck bench --fit-cascade` runs on a labelled file with a loopback judge."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from scripted_openai_server import Received, Reply, ScriptedOpenAIServer

from refcheck_callbacks import CheckItem, Claim, Label, Reference, Verdict
from refcheck_callbacks.bench.cascade_fit import StageRule, fit, fitted_spec, replay
from refcheck_callbacks.bench.metrics import balanced_accuracy
from refcheck_callbacks.check.cascade import CascadeChecker, CascadeStage, Certainty
from refcheck_callbacks.cli.main import main

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION


class Fixed:
    """A checker that says what it was told about each claim."""

    def __init__(self, name: str, verdicts: dict[str, Verdict]) -> None:
        self.name, self.verdicts = name, verdicts

    async def check(self, items: Sequence[CheckItem]) -> list[Verdict]:
        return [self.verdicts[item.claim.text] for item in items]


def synthetic(count: int = 40) -> tuple[list[str], list[bool], list[Verdict], list[Verdict]]:
    """A cheap stage right when confident, wrong when not; a dear stage always right."""
    claims = [f"claim {i}" for i in range(count)]
    gold = [i % 3 != 0 for i in range(count)]
    cheap, dear = [], []
    for i, supported in enumerate(gold):
        confidence = 0.5 + 0.5 * i / count
        right = confidence > 0.7
        label = E if supported == right else (N if i % 2 else C)
        support = confidence if label is E else 1 - confidence
        probabilities = {E: support, N: 1 - support, C: 0.0}
        if label is C:
            probabilities = {E: support, N: 0.0, C: 1 - support}
        cheap.append(Verdict(label=label, confidence=confidence, probabilities=probabilities))
        dear.append(Verdict(label=E if supported else N, confidence=0.9))
    cheap[5] = Verdict(label=None, error="cheap stage failed")
    return claims, gold, cheap, dear


@pytest.mark.parametrize(
    ("threshold", "escalate", "by"),
    [(0.0, set(), "confidence"), (0.75, set(), "confidence"), (0.6, {C}, "confidence"),
     (0.2, set(), "margin")],
)  # fmt: skip
def test_the_replay_is_what_the_cascade_checker_does(
    threshold: float, escalate: set[Label], by: Certainty
) -> None:
    claims, gold, cheap, dear = synthetic()
    first = CascadeStage(
        Fixed("cheap", dict(zip(claims, cheap, strict=True))), threshold, frozenset(escalate),
        by=by,
    )  # fmt: skip
    cascade = CascadeChecker([first, Fixed("dear", dict(zip(claims, dear, strict=True)))])
    items = [CheckItem(claim=Claim(text=c), references=[Reference(text="r")], request_id="r",
                       claim_index=i) for i, c in enumerate(claims)]  # fmt: skip
    verdicts = asyncio.run(cascade.check(items))
    reached = sum(len(v.stages) == 2 for v in verdicts) / len(claims)
    real = balanced_accuracy(gold, [v.label is E for v in verdicts])
    point = replay(gold, [cheap, dear], [StageRule.of(first), StageRule()], [threshold])
    assert point.balanced_accuracy == pytest.approx(real)
    assert point.escalated == pytest.approx(reached)
    assert point.reached[0] == 1.0 and point.failed == 0


def test_the_fit_meets_a_share_or_an_accuracy_and_says_when_nothing_does() -> None:
    _, gold, cheap, dear = synthetic()
    rules = [StageRule(), StageRule()]
    by_share = fit(["cheap", "dear"], gold, [cheap, dear], rules, target_escalation=0.5)
    assert by_share.chosen is not None
    assert by_share.chosen.escalated <= 0.5
    assert by_share.stage_alone["dear"] == 1.0 and by_share.stage_alone["cheap"] < 1.0
    frontier = by_share.frontier
    assert [p.escalated for p in frontier] == sorted(p.escalated for p in frontier)
    assert [p.balanced_accuracy for p in frontier] == sorted(p.balanced_accuracy for p in frontier)
    assert by_share.chosen.balanced_accuracy == max(
        p.balanced_accuracy for p in frontier if p.escalated <= 0.5
    )
    by_accuracy = fit(["cheap", "dear"], gold, [cheap, dear], rules, target_balanced_accuracy=1.0)
    assert by_accuracy.chosen is not None
    assert by_accuracy.chosen.balanced_accuracy == 1.0
    assert by_accuracy.chosen.escalated < 1.0  # the confident cheap verdicts are all right
    assert by_accuracy.chosen.escalated == min(
        p.escalated for p in frontier if p.balanced_accuracy == 1.0
    )
    never = fit(["cheap", "dear"], gold, [cheap, cheap], rules, target_balanced_accuracy=1.0)
    assert never.chosen is None and never.frontier
    with pytest.raises(ValueError, match="give one target"):
        fit(["cheap", "dear"], gold, [cheap, dear], rules)


def test_the_fitted_spec_carries_the_thresholds_and_keeps_the_labels() -> None:
    _, gold, cheap, dear = synthetic()
    point = replay(gold, [cheap, cheap, dear], [StageRule()] * 3, [0.61234, 0.8])
    spec = fitted_spec(["embedded[margin,0.5,contradiction]", "nli:m", "llm:x"], point)
    assert spec == "cascade:embedded[0.6123,margin,contradiction]>nli:m[0.8]>llm:x"


REFERENCE = (
    "The Eiffel Tower is in Paris. It was finished in 1889 for the World's Fair. "
    "Gustave Eiffel's company designed and built it. It is about 330 metres tall."
)
LABELLED = [
    ("The Eiffel Tower is in Paris.", "entailment"),
    ("The Eiffel Tower was finished in 1889.", "entailment"),
    ("Gustave Eiffel's company built the tower.", "entailment"),
    ("It is about 330 metres tall.", "entailment"),
    ("The tower was built for the World's Fair.", "entailment"),
    ("The Eiffel Tower is in Rome.", "contradiction"),
    ("The Eiffel Tower was finished in 1925.", "contradiction"),
    ("It is about 90 metres tall.", "contradiction"),
    ("Paris is in the Eiffel Tower.", "contradiction"),  # a relation reversed: embedded misses it
    ("The tower is painted green every spring.", "neutral"),
    ("Millions of people visit the tower each year.", "neutral"),
    ("The tower has a restaurant on its second floor.", "neutral"),
    ("Its lifts were made by an American company.", "neutral"),
]


def test_bench_fits_a_cascade_on_a_labelled_file(
    llm_server: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labelled = tmp_path / "mine.jsonl"
    labelled.write_text(
        "\n".join(json.dumps({"claim": c, "references": [REFERENCE], "label": lab})
                  for c, lab in LABELLED),
        encoding="utf-8",
    )  # fmt: skip
    gold = dict(LABELLED)

    def judge(request: Received) -> Reply:
        claims = re.findall(r"Claim (\d+): (.*)", request.prompt)
        blocks = [f"Claim {n}:\nReasoning: r\nLabel: {gold[text.strip()]}" for n, text in claims]
        return Reply(content="\n".join(blocks))

    llm_server.respond(judge)
    spec = "cascade:embedded>llm:hosted_vllm/judge"
    status = main(["bench", "--dataset", f"file:{labelled}", "--fit-cascade", spec,
                   "--target-escalation", "0.5", "--checker-api-base", llm_server.api_base,
                   "--output-dir", str(tmp_path / "out"), "--no-progress"])  # fmt: skip
    printed = capsys.readouterr()
    assert status == 0, printed.err
    assert "embedded 0." in printed.out and "llm-adherence 1.000" in printed.out
    judged = [c for r in llm_server.chat_requests() for _, c in re.findall(
        r"Claim (\d+): (.*)", r.prompt)]  # fmt: skip
    assert sorted(judged) == sorted(gold)  # every stage labels every claim once
    report = json.loads((tmp_path / "out" / "cascade_fit.json").read_text(encoding="utf-8"))
    chosen = report["fit"]["chosen"]
    assert chosen["reached"][1] <= 0.5
    assert report["fitted_spec"] in printed.out
    assert re.fullmatch(r"cascade:embedded\[[0-9.]+\]>llm:hosted_vllm/judge", report["fitted_spec"])
    assert set(report["per_dataset"]) == {"mine"}
    assert report["per_dataset"]["mine"]["balanced_accuracy"] == chosen["balanced_accuracy"]
