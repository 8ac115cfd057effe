"""`refcheck bench --dataset relevance` (`bench.datasets.RELEVANCE`): the relevance head and
the cause rule, measured.

Three parts, each with the shipped head (`check.relevance.scorer.EmbeddedRelevance`) and the
baseline (`bench.relevance_baseline`: the static MiniLM cosine) side by side:
1. reference relevance: MAP, MRR and AUROC on WikiQA dev and TREC QA DEV
   (`bench.relevance_ranking`);
2. claim relevance to the question vs ExpertQA's informativeness ratings (AUROC);
3. the cause probes (`bench.cause_probes`) through the production pipeline with each
   checker of the run (default: embedded) and its conflict stage: the head's causes are the
   pipeline's own; the baseline's come from the diagnostics stage run again on the same
   verdicts with the baseline in the head's place (labels do not depend on relevance).

Sizes are bounded by `limit` (default `DEFAULT_LIMIT`): questions per QA split, ExpertQA
questions, items per set and probe, each drawn with the run's seed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from refcheck_callbacks.bench.cause_probes import Probe, qa_probes, set_probes
from refcheck_callbacks.bench.checking import bench_pipeline
from refcheck_callbacks.bench.relevance_baseline import (
    BASELINE_NAME,
    StaticCosineRelevance,
    balanced_threshold,
)
from refcheck_callbacks.bench.relevance_ranking import (
    QA_SPLITS,
    claim_relevance,
    expertqa_answers,
    qa_questions,
    ranking_figures,
    score_questions,
)
from refcheck_callbacks.bench.relevance_results import (
    ClaimRelevanceFigures,
    ProbeFigures,
    RankingFigures,
    RelevanceReport,
)
from refcheck_callbacks.check.diagnose.stage import Diagnostics, RelevanceScorer
from refcheck_callbacks.contract.components import Checker
from refcheck_callbacks.contract.registry import ConflictSource
from refcheck_callbacks.engine.pipeline import DEFAULT_CONFLICT
from refcheck_callbacks.support.progress import Progress
from refcheck_callbacks.types import Cause, Label, Outcome, Verdict

DEFAULT_LIMIT = 250
"""Without `--limit`: every QA question here (122 + 65) and every ExpertQA question (217);
250 items per set and probe. About a minute on two cores with the embedded checker."""
HEAD_NAME = "head"
REQUESTS_PER_CALL = 64


def _unsupported(verdict: Verdict) -> bool:
    return verdict.label in (Label.NEUTRAL, Label.CONTRADICTION)


def _share(count: int, total: int) -> float | None:
    return round(count / total, 4) if total else None


def probe_figures(
    probe: Probe, checker: str, scorer: str, requests: int, verdicts: Sequence[Verdict]
) -> ProbeFigures:
    """The label shares, the cause shares of the unsupported claims and the probe's figures."""
    labelled = [v for v in verdicts if v.label is not None]
    unsupported = [v for v in labelled if _unsupported(v)]
    labels = {label.value: sum(v.label is label for v in labelled) for label in Label}
    causes = {cause.value: sum(v.cause is cause for v in unsupported) for cause in Cause}
    figures: dict[str, float | None] = {}
    for name in probe.targets:
        kind, value = name.split(":", 1)
        if kind == "label":
            figures[name] = _share(labels[value], len(labelled))
        elif kind == "cause":
            figures[name] = _share(causes[value], len(labelled))
        else:
            figures[name] = _share(causes[value], len(unsupported))
    return ProbeFigures(
        probe=probe.name,
        source=probe.source,
        checker=checker,
        scorer=scorer,
        requests=requests,
        claims=len(labelled),
        labels={k: _share(v, len(labelled)) or 0.0 for k, v in labels.items()},
        unsupported=len(unsupported),
        causes={k: _share(v, len(unsupported)) or 0.0 for k, v in causes.items()},
        figures=figures,
        targets=probe.targets,
    )


async def run_probes(
    probes: Sequence[Probe],
    checkers: Mapping[str, Checker],
    scorers: Mapping[str, RelevanceScorer],
    conflict: ConflictSource = DEFAULT_CONFLICT,
    progress: bool = True,
) -> list[ProbeFigures]:
    """Each probe through each checker's pipeline; figures per (checker, scorer). The first
    scorer is the pipeline's own (the head); the others diagnose the same verdicts again."""
    own, *others = scorers
    stages = {name: Diagnostics(scorers[name]) for name in others}
    out = []
    total = sum(len(r.claims or ()) for probe in probes for r in probe.requests)
    for checker_name, checker in checkers.items():
        pipeline = bench_pipeline(checker, conflict)
        bar = Progress(total, f"relevance / {checker_name}", enabled=progress)
        for probe in probes:
            results = []
            for start in range(0, len(probe.requests), REQUESTS_PER_CALL):
                chunk = probe.requests[start : start + REQUESTS_PER_CALL]
                results += await pipeline.run(chunk)
                bar.advance(sum(len(r.claims or ()) for r in chunk))
            checked = [r for r in results if r.outcome in (Outcome.CHECKED, Outcome.PARTIAL)]
            verdicts = {own: [v for r in checked for v in r.verdicts]}
            for name, stage in stages.items():
                verdicts[name] = [
                    v
                    for r in checked
                    for v in stage.diagnose(r.request, r.claims, r.verdicts).verdicts
                ]
            out += [
                probe_figures(probe, checker_name, name, len(probe.requests), found)
                for name, found in verdicts.items()
            ]
        bar.close()
    return out


async def relevance_report(
    checkers: Mapping[str, Checker],
    limit: int | None = None,
    seed: int = 0,
    root: Path | None = None,
    conflict: ConflictSource = DEFAULT_CONFLICT,
    progress: bool = True,
) -> RelevanceReport:
    """The whole relevance bench; parts whose data is missing go in `unavailable`."""
    from refcheck_callbacks.check.relevance.scorer import EmbeddedRelevance

    started = time.perf_counter()
    limit = limit or DEFAULT_LIMIT
    unavailable: dict[str, str] = {}
    head, baseline = EmbeddedRelevance(), StaticCosineRelevance()
    ranking: list[RankingFigures] = []
    try:
        questions = qa_questions(limit, seed, root)
    except OSError as exc:
        questions = []
        unavailable["wikiqa, trecqa"] = f"{type(exc).__name__}: {exc}"
    relevant: list[bool] = []
    cosines: list[float] = []
    for dataset, split in QA_SPLITS:
        members = [q for q in questions if q.split == f"{dataset} {split}"]
        if not members:
            continue
        for name, scorer in ((HEAD_NAME, head), (BASELINE_NAME, baseline)):
            scored = score_questions(scorer, members)
            ranking.append(ranking_figures(f"{dataset} {split}", name, scored))
        relevant += scored.relevant
        cosines += scored.alone
    threshold = round(balanced_threshold(relevant, cosines), 4) if relevant else None
    scorers: dict[str, RelevanceScorer] = {
        HEAD_NAME: head,
        BASELINE_NAME: baseline.with_threshold(0.5 if threshold is None else threshold),
    }
    claims: list[ClaimRelevanceFigures] = []
    try:
        claims = claim_relevance(scorers, expertqa_answers(limit, seed, root))
    except OSError as exc:
        unavailable["expertqa claim relevance"] = f"{type(exc).__name__}: {exc}"
    probes, missing = set_probes(limit, seed, root)
    unavailable.update(missing)
    figures = await run_probes(qa_probes(questions) + probes, checkers, scorers, conflict, progress)
    return RelevanceReport(
        limit=limit,
        seed=seed,
        baseline_threshold=threshold,
        ranking=ranking,
        claims=claims,
        probes=figures,
        unavailable=unavailable,
        seconds=round(time.perf_counter() - started, 1),
    )
