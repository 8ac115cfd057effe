"""The cause rule on RGB-like probes built from WikiQA dev and TREC QA DEV (issue 45).

For each question with an answer sentence (the "right answer") and topical sentences that do
not answer it, through the default offline pipeline with the question:
- right answer vs the topical sentences only: share of claims caused `retrieval_missed`;
- right answer vs its positive sentences: share labelled Entailment;
- wrong answer (the right answer with its first figure changed) vs the positives: share
  labelled Contradiction (questions whose answer holds a figure).
Also the reference relevance figures (MAP, AUROC) of the shipped head on the same splits.

    python benchmarks/relevance_probes.py [--limit 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from collections import defaultdict

from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.engine.pipeline import Pipeline
from refcheck_callbacks.extract.sentences import SentenceExtractor
from refcheck_callbacks.training.relevance_data import load_pairs
from refcheck_callbacks.types import Cause, CheckRequest, Claim, Label, Reference

_FIGURE = re.compile(r"\b\d+\b")


def _changed(text: str) -> str | None:
    match = _FIGURE.search(text)
    if match is None:
        return None
    value = int(match.group())
    return text[: match.start()] + str(value + (7 if value > 100 else 3)) + text[match.end() :]


def _request(question: str, claim: str, references: list[str]) -> CheckRequest:
    return CheckRequest(
        answer=claim,
        question=question,
        claims=(Claim(text=claim),),
        references=tuple(Reference(text=t) for t in references),
    )


def probes(limit: int) -> dict[str, list[CheckRequest]]:
    out: dict[str, list[CheckRequest]] = defaultdict(list)
    for dataset, split in (("wikiqa", "dev"), ("trecqa", "DEV")):
        by_question: dict[str, list] = defaultdict(list)
        for pair in load_pairs(dataset, split):
            by_question[pair.question_id].append(pair)
        for pairs in list(by_question.values())[:limit]:
            positives = [p.passage for p in pairs if p.relevant]
            negatives = [p.passage for p in pairs if not p.relevant][:5]
            if not positives or not negatives:
                continue
            question, right = pairs[0].question, positives[0]

            out["right_vs_negatives"].append(_request(question, right, negatives))
            out["right_vs_positives"].append(_request(question, right, positives))
            wrong = _changed(right)
            if wrong is not None:
                out["wrong_vs_positives"].append(_request(question, wrong, positives))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=200, help="questions per set")
    args = parser.parse_args()
    pipeline = Pipeline(SentenceExtractor(), EmbeddedChecker())
    report = {}
    for name, requests in probes(args.limit).items():
        results = asyncio.run(pipeline.run(requests))
        verdicts = [v for r in results for v in r.verdicts]
        causes = {c.value: sum(v.cause is c for v in verdicts) / len(verdicts) for c in Cause}
        labels = {
            label.value: sum(v.label is label for v in verdicts) / len(verdicts) for label in Label
        }
        report[name] = {
            "claims": len(verdicts),
            "causes": {k: round(v, 3) for k, v in causes.items()},
            "labels": {k: round(v, 3) for k, v in labels.items()},
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
