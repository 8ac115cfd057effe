"""How well a relevance scorer ranks: references against questions (WikiQA dev, TREC QA DEV)
and claims against their question (ExpertQA), for `refcheck bench --dataset relevance`.

- References: each question's candidate sentences, scored among each other as the
  diagnostics stage scores a request's references; MAP and MRR over the questions with an
  answer-bearing and a topical candidate, and AUROC pooled over their pairs. The negatives are
  sentences of the same page or story that do not answer the question: RGB's "topical
  passages without the answer", what the head must tell apart.
- Claims: each ExpertQA answer's claims (`training.relevance_data.load_claim_relevance`:
  relevant = `informativeness` "Very relevant" or "A bit relevant", not relevant = "Not too
  important" or "Uninformative", the cut the claim model was fitted on) through the
  diagnostics stage itself (`Diagnostics.diagnose`, claims given, no checking needed: claim
  relevance reads only the question and the answer's claims); beside it, the scorer's
  question-passage score of each claim among its answer's claims (what claim relevance was
  before it read the rest of the answer). The claim model is a monotone map of one cosine
  fitted on these judgements, so its AUROC is the same in and out of sample.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from refcheck_callbacks.bench.metrics import auroc, mean_average_precision, mean_reciprocal_rank
from refcheck_callbacks.bench.relevance_results import ClaimRelevanceFigures, RankingFigures
from refcheck_callbacks.check.diagnose.stage import Diagnostics, RelevanceScorer
from refcheck_callbacks.training.relevance_data import (
    ClaimRelevance,
    load_claim_relevance,
    load_pairs,
)
from refcheck_callbacks.types import CheckRequest, Claim, Verdict

QA_SPLITS = (("wikiqa", "dev"), ("trecqa", "DEV"))
"""The splits here (the test splits are held out); the shipped head was trained on them."""


@dataclass(frozen=True)
class QAQuestion:
    """A question with its candidate sentences, at least one answering it and one not."""

    split: str
    question_id: str
    question: str
    passages: tuple[str, ...]
    relevant: tuple[bool, ...]

    @property
    def positives(self) -> list[str]:
        return [p for p, r in zip(self.passages, self.relevant, strict=True) if r]

    @property
    def negatives(self) -> list[str]:
        return [p for p, r in zip(self.passages, self.relevant, strict=True) if not r]


def _sample(items: list[object], limit: int, seed: int) -> list[int]:
    """Positions of at most `limit` items, seeded, in their original order."""
    positions = list(range(len(items)))
    if len(positions) > limit:
        positions = sorted(random.Random(seed).sample(positions, limit))
    return positions


def qa_questions(limit: int, seed: int = 0, root: Path | None = None) -> list[QAQuestion]:
    """At most `limit` questions per split that have both kinds of candidate (seeded)."""
    out: list[QAQuestion] = []
    for dataset, split in QA_SPLITS:
        grouped: dict[str, list[tuple[str, str, bool]]] = {}
        for pair in load_pairs(dataset, split, root):
            grouped.setdefault(pair.question_id, []).append(
                (pair.question, pair.passage, pair.relevant)
            )
        both = [
            (qid, rows)
            for qid, rows in grouped.items()
            if any(r for *_, r in rows) and not all(r for *_, r in rows)
        ]
        for position in _sample(list(both), limit, seed):
            qid, rows = both[position]
            out.append(
                QAQuestion(
                    split=f"{dataset} {split}",
                    question_id=qid,
                    question=rows[0][0],
                    passages=tuple(p for _, p, _ in rows),
                    relevant=tuple(r for *_, r in rows),
                )
            )
    return out


@dataclass
class Scored:
    """Every pair of some questions, scored by one scorer among its question's candidates
    and alone."""

    groups: list[str]
    relevant: list[bool]
    among: list[float]
    alone: list[float]


def score_questions(scorer: RelevanceScorer, questions: Sequence[QAQuestion]) -> Scored:
    scored = Scored([], [], [], [])
    for question in questions:
        among, alone = scorer.scores(question.question, scorer.prepare(question.passages))
        scored.groups += [question.question_id] * len(question.passages)
        scored.relevant += question.relevant
        scored.among += among
        scored.alone += alone
    return scored


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def ranking_figures(split: str, scorer: str, scored: Scored) -> RankingFigures:
    return RankingFigures(
        split=split,
        scorer=scorer,
        questions=len(set(scored.groups)),
        pairs=len(scored.groups),
        map=_rounded(mean_average_precision(scored.groups, scored.relevant, scored.among)),
        mrr=_rounded(mean_reciprocal_rank(scored.groups, scored.relevant, scored.among)),
        auroc=_rounded(auroc(scored.relevant, scored.among)),
        auroc_alone=_rounded(auroc(scored.relevant, scored.alone)),
    )


def expertqa_answers(
    limit: int, seed: int = 0, root: Path | None = None
) -> list[list[ClaimRelevance]]:
    """The judged claims of each answer to at most `limit` ExpertQA questions (seeded), as
    the training reads them (`training.relevance_data.load_claim_relevance`)."""
    answers: dict[str, list[ClaimRelevance]] = {}
    for claim in load_claim_relevance(root):
        answers.setdefault(claim.question_id, []).append(claim)
    questions = list(dict.fromkeys(claims[0].question for claims in answers.values()))
    chosen = {questions[i] for i in _sample(list(questions), limit, seed)}
    return [claims for claims in answers.values() if claims[0].question in chosen]


def claim_relevance(
    scorers: Mapping[str, RelevanceScorer], answers: Sequence[Sequence[ClaimRelevance]]
) -> list[ClaimRelevanceFigures]:
    """Each scorer's claim relevance, as the diagnostics stage computes it, against the
    experts' judgements; and its question-passage score of the claims (`scores`)."""
    relevant = [claim.relevant for claims in answers for claim in claims]
    out = []
    for name, scorer in scorers.items():
        stage = Diagnostics(scorer)
        scores: list[float] = []
        question_only: list[float] = []
        for judged in answers:
            question = judged[0].question
            claims = [Claim(text=claim.claim) for claim in judged]
            request = CheckRequest(
                answer=judged[0].answer or " ".join(c.text for c in claims),
                question=question,
                claims=claims,
            )
            unlabelled = [Verdict(label=None, error="not checked: claim relevance only")]
            unlabelled *= len(claims)
            diagnosis = stage.diagnose(request, claims, unlabelled)
            scores += [v.relevance if v.relevance is not None else 0.0 for v in diagnosis.verdicts]
            question_only += scorer.scores(question, scorer.prepare([c.text for c in claims]))[0]
        out.append(
            ClaimRelevanceFigures(
                scorer=name,
                claims=len(scores),
                relevant=sum(relevant),
                auroc=_rounded(auroc(relevant, scores)),
                auroc_question_only=_rounded(auroc(relevant, question_only)),
            )
        )
    return out
