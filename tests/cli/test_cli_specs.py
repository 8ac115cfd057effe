"""Family, preset and cascade specs through `refcheck check`: `nli:FAMILY@MODEL`, a model whose
directory names its family, `llm:PRESET@hosted_vllm/...`, and `cascade:A[T]>B`."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from scripted_openai_server import Received, Reply, ScriptedOpenAIServer
from tiny_models import save_seq2seq

from refcheck_callbacks.check.cascade import CascadeChecker
from refcheck_callbacks.check.judge.checker import LLMChecker
from refcheck_callbacks.check.nli.checker import NLIChecker
from refcheck_callbacks.cli.main import main
from refcheck_callbacks.contract.registry import build_checker
from refcheck_callbacks.errors import ComponentSpecError
from refcheck_callbacks.types import Label

RECORDS = [
    {
        "response": "The Eiffel Tower is in Paris. It was finished in 1925.",
        "reference": ["The Eiffel Tower is in Paris. It was finished in 1889."],
        "claims": ["The Eiffel Tower is in Paris.", "The Eiffel Tower was finished in 1925."],
    }
]


@pytest.fixture(scope="module")
def t5_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("specs")
    return {
        "named": save_seq2seq(root / "MiniCheck-Flan-T5-Large"),
        "plain": save_seq2seq(root / "checkpoint-1200"),
    }


def run_check(tmp_path: Path, *options: str) -> list[dict[str, Any]]:
    source, out = tmp_path / "in.json", tmp_path / "out.json"
    source.write_text(json.dumps(RECORDS), encoding="utf-8")
    status = main(["check", "--input", str(source), "--output", str(out), "--no-progress",
                   *options])  # fmt: skip
    assert status == 0
    records: list[dict[str, Any]] = json.loads(out.read_text(encoding="utf-8"))
    return records


def test_a_family_is_named_in_front_of_a_directory_that_does_not_say_it(
    t5_dirs: dict[str, Path], tmp_path: Path
) -> None:
    with pytest.raises(ComponentSpecError, match=r"sequence-to-sequence.*checkpoint-1200"):
        build_checker(f"nli:{t5_dirs['plain']}")
    [record] = run_check(tmp_path, "--checker", f"nli:minicheck-flan-t5@{t5_dirs['plain']}")
    assert record["refcheck"]["checker"] == "minicheck-flan-t5"
    # A 2-way checker says Entailment or Neutral; the conflict stage turns its Neutral on the
    # claim whose year the reference states otherwise into a Contradiction.
    assert record["ys"][0] in ("Entailment", "Neutral")
    assert record["ys"][1] in ("Entailment", "Contradiction")


def test_a_directory_named_like_the_published_model_needs_no_family(
    t5_dirs: dict[str, Path],
) -> None:
    checker = build_checker(f"nli:{t5_dirs['named']}")
    assert isinstance(checker, NLIChecker) and checker.family.name == "minicheck-flan-t5"
    with pytest.raises(ComponentSpecError, match="unknown family 'minicheck'; known: "):
        build_checker(f"nli:minicheck@{t5_dirs['named']}")


def test_a_preset_spec_reaches_a_vllm_served_checker(
    llm_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    llm_server.respond(lambda request: Reply(content="Yes", top_logprobs=[{"Yes": math.log(0.9)}]))
    spec = "llm:bespoke-minicheck@hosted_vllm/bespoke"
    checker = build_checker(spec, llm_server.api_base)
    assert isinstance(checker, LLMChecker) and checker.preset is not None
    [record] = run_check(tmp_path, "--checker", spec, "--checker-api-base", llm_server.api_base)
    assert record["ys"] == ["Entailment", "Entailment"]
    assert {r.body["model"] for r in llm_server.chat_requests()} == {"bespoke"}


def test_a_cascade_spec_sends_only_unsure_claims_to_its_judge(
    llm_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    def respond(request: Received) -> Reply:
        blocks = [f"Claim {n}:\nReasoning: Checked.\nLabel: Contradiction" for n in (1, 2)]
        return Reply(content="\n".join(blocks))

    llm_server.respond(respond)
    spec = "cascade:embedded[1.0,contradiction]>llm:hosted_vllm/judge"
    checker = build_checker(spec, llm_server.api_base)
    assert isinstance(checker, CascadeChecker)
    [(_, first), _] = checker.stages
    assert first.threshold == 1.0 and first.escalate == {Label.CONTRADICTION}
    assert first.by == "confidence"
    margin_cascade = build_checker("cascade:embedded[margin,0.1]>embedded")
    assert isinstance(margin_cascade, CascadeChecker)
    [(_, by_margin), _] = margin_cascade.stages
    assert (by_margin.by, by_margin.threshold) == ("margin", 0.1)
    [record] = run_check(tmp_path, "--checker", spec, "--checker-api-base", llm_server.api_base)
    # The judge cites no evidence: its Contradiction stands only where the conflict stage finds
    # the conflicting statement (the year), the other claim is only unsupported.
    assert record["ys"] == ["Neutral", "Contradiction"]
    assert len(llm_server.chat_requests()) == 1  # one joint prompt for the answer's two claims
    stages = [[s["stage"] for s in claim["stages"]] for claim in record["refcheck"]["claims"]]
    assert stages == [["embedded", "llm-adherence"]] * 2

    llm_server.reset()
    [record] = run_check(tmp_path, "--checker", "cascade:embedded>llm:hosted_vllm/judge",
                         "--checker-api-base", llm_server.api_base)  # fmt: skip
    assert llm_server.chat_requests() == []  # threshold 0: the embedded checker decides all


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("cascade:embedded", "a cascade needs at least two stages"),
        ("cascade:embedded[0.5,maybe]>embedded", "one threshold, `margin` and labels"),
        ("cascade:embedded[0.2,0.4]>embedded", "one threshold, `margin` and labels"),
        ("cascade:embedded[2]>embedded", r"confidence in \[0, 1\], got 2.0"),
        ("cascade:embedded>cascade:embedded>embedded", "is not a stage spec"),
        ("cascade:embedded>magic", "unknown checker 'magic'"),
        ("llm:nopreset@hosted_vllm/x", "unknown judge preset 'nopreset'"),
    ],
)
def test_bad_family_preset_and_cascade_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(ComponentSpecError, match=message):
        build_checker(spec)
