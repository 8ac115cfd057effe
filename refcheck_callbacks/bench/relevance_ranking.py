"""How well a relevance scorer ranks: references against questions (WikiQA dev, TREC QA DEV)
and claims against their question (ExpertQA), for `refcheck bench --dataset relevance`.

- References: each question's candidate sentences, scored among each other as the
  diagnostics stage scores a request's references; MAP and MRR over the questions with an
  answer-bearing and a topical candidate, and AUROC pooled over their pairs. The negatives are
  sentences of the same page or story that do not answer the question: RGB's "topical
  passages without the answer", what the head must tell apart.
- Claims: each ExpertQA answer's claims through the diagnostics stage itself
  (`Diagnostics.diagnose`, claims given, no checking needed: claim relevance reads only the
  question and the claims), against the annotators' `informativeness` of each claim. Its
  values are "Very relevant", "A bit relevant", "Not too important" and "Uninformative";
  the first two count as relevant (the claim bears on the question), the last two do not (it
  is beside the point); `auroc_very_relevant` also reports the stricter cut, and
  `auroc_alone` each claim scored alone rather than among its answer's other claims, as the
  stage scores them. Claims with no rating are left out. The head never saw ExpertQA: these
  figures are held out.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from refcheck_callbacks.bench.data_dir import data_dir
from refcheck_callbacks.bench.datasets import strip_citations
from refcheck_callbacks.bench.metrics import auroc, mean_average_precision, mean_reciprocal_rank
from refcheck_callbacks.bench.relevance_results import ClaimRelevanceFigures, RankingFigures
from refcheck_callbacks.check.diagnose.stage import Diagnostics, RelevanceScorer
from refcheck_callbacks.training.relevance_data import load_pairs
from refcheck_callbacks.types import CheckRequest, Claim, Verdict

QA_SPLITS = (("wikiqa", "dev"), ("trecqa", "DEV"))
"""The splits here (the test splits are held out); the shipped head was trained on them."""
RELEVANT_RATINGS = frozenset({"Very relevant", "A bit relevant"})
IRRELEVANT_RATINGS = frozenset({"Not too important", "Uninformative"})


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


@dataclass(frozen=True)
class RatedAnswer:
    """One ExpertQA answer: its question, text, and each rated claim with its rating."""

    question: str
    answer: str
    claims: tuple[str, ...]
    ratings: tuple[str, ...]


def expertqa_answers(limit: int, seed: int = 0, root: Path | None = None) -> list[RatedAnswer]:
    """The answers of at most `limit` ExpertQA questions (seeded), rated claims only."""
    path = (root or data_dir()) / "expertqa" / "rand_val.jsonl"
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    answers = []
    for position in _sample(list(lines), limit, seed):
        row = json.loads(lines[position])
        for answer in row["answers"].values():
            rated = [
                (strip_citations(claim["claim_string"]), claim["informativeness"])
                for claim in answer["claims"]
                if claim.get("informativeness") in RELEVANT_RATINGS | IRRELEVANT_RATINGS
            ]
            rated = [(text, rating) for text, rating in rated if text]
            if rated:
                answers.append(
                    RatedAnswer(
                        question=row["question"],
                        answer=answer.get("answer_string") or " ".join(t for t, _ in rated),
                        claims=tuple(text for text, _ in rated),
                        ratings=tuple(rating for _, rating in rated),
                    )
                )
    return answers


def claim_relevance(
    scorers: Mapping[str, RelevanceScorer], answers: Sequence[RatedAnswer]
) -> list[ClaimRelevanceFigures]:
    """Each scorer's claim relevance, as the diagnostics stage computes it, vs the ratings."""
    ratings = [rating for answer in answers for rating in answer.ratings]
    relevant = [rating in RELEVANT_RATINGS for rating in ratings]
    very = [rating == "Very relevant" for rating in ratings]
    out = []
    for name, scorer in scorers.items():
        stage = Diagnostics(scorer)
        scores: list[float] = []
        alone: list[float] = []
        for answer in answers:
            claims = [Claim(text=text) for text in answer.claims]
            request = CheckRequest(answer=answer.answer, question=answer.question, claims=claims)
            unlabelled = [Verdict(label=None, error="not checked: claim relevance only")]
            unlabelled *= len(claims)
            diagnosis = stage.diagnose(request, claims, unlabelled)
            scores += [v.relevance if v.relevance is not None else 0.0 for v in diagnosis.verdicts]
            alone += scorer.scores(answer.question, scorer.prepare(answer.claims))[1]
        out.append(
            ClaimRelevanceFigures(
                scorer=name,
                claims=len(scores),
                relevant=sum(relevant),
                auroc=_rounded(auroc(relevant, scores)),
                auroc_alone=_rounded(auroc(relevant, alone)),
                auroc_very_relevant=_rounded(auroc(very, scores)),
            )
        )
    return out
