"""The relevance head's training end to end on the shared data (no MiniLM baseline): what it
writes loads, ranks and carries the claim-relevance logistic fitted on ExpertQA."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from required import skip_or_fail

from refcheck_callbacks.bench.data_dir import data_dir
from refcheck_callbacks.check.relevance.head import load_head
from refcheck_callbacks.check.relevance.scorer import EmbeddedRelevance
from refcheck_callbacks.training import relevance_training
from refcheck_callbacks.training.relevance_data import load_claim_relevance

pytestmark = pytest.mark.labelled_data("expertqa")
if not (data_dir() / "wikiqa" / "train").exists():
    skip_or_fail(f"WikiQA and TREC QA not in {data_dir()} (the shared data: REFCHECK_DATA_DIR)")


def test_training_writes_a_head_that_ranks_and_reads_claims(tmp_path: Path) -> None:
    out = tmp_path / "head.json"
    argv = ["--no-baseline", "--work-dir", str(tmp_path / "cache"), "--out", str(out)]
    assert relevance_training.main(argv) == 0
    written = json.loads(out.read_text(encoding="utf-8"))
    figures = written["figures"]
    assert (
        figures["dev"]["wikiqa"]["after"]["map"] > figures["dev"]["wikiqa"]["static_cosine"]["map"]
    )
    claims = figures["claim_relevance"]
    assert claims["auroc_after"] > 0.5 and written["claim_slope"] > 0
    relevance = EmbeddedRelevance(head_path=out)
    assert load_head(out).threshold == 0.5
    on_topic, digression = relevance.claim_scores(
        "When was the Eiffel Tower completed?",
        relevance.prepare(["The Eiffel Tower was completed in 1889.", "Bananas are yellow."]),
    )
    assert digression < on_topic


def test_expertqa_claims_carry_the_experts_relevance() -> None:
    claims = load_claim_relevance()
    assert claims and {claim.relevant for claim in claims} == {True, False}
    assert all(claim.question and claim.claim for claim in claims)
