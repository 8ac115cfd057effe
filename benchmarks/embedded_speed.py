"""Embedded checker speed: claims checked per second on the CPU, next to full MiniLM encoding.

Workload: answers of 4 claims, each with 5 references of ~150 words, built from ExpertQA (real
retrieved passages and real answer claims, from the data folder: `refcheck data`). Every answer
has its own reference texts, so nothing is served from a cache.

Side by side in one run:
- learned: `EmbeddedChecker.check_batch` on batches of 16 answers (64 claims), as the engine
  hands them over; reported as claims per second (median of the repeats).
- full MiniLM: only *embedding* the same claims and reference sentences with the transformer
  (`SentenceEncoder`, what the previous heuristic checker paid before any scoring), on a
  smaller slice; reported the same way, with the ratio learned / full.
- learned + full-MiniLM top-1: the learned checker plus encoding each claim and its top
  segment with the transformer (max 64 tokens, one call per batch), the cheapest way to give
  the checker full-MiniLM features; on 4 x --minilm-answers answers.
- pipeline (`--pipeline-only`): the whole offline pipeline as the monitor runs it, each
  answer's four claims joined into its text: preparation, sentence extraction, the checker
  and the conflict stage, 16 answers per batch. It uses only names every version has, so the
  same script times another checkout (PYTHONPATH=that/checkout) to compare versions.
  Each ExpertQA answer carries one of ExpertQA's questions, so retrieval diagnostics score
  every reference and claim; `--versus no-diagnostics` times the same pipeline without them,
  in turn (the issue-45 cost: diagnostics on must keep 90% of the claims/s).
  `--versus SPEC` also times the pipeline with another checker (the reader's cascade),
  repeat by repeat in turn with the default's, and reports the ratio and, for a cascade, the
  share of claims its later stages decided. `--workload labelled` times it on the shared sets'
  claims with their own references instead (each claim its own answer, `--answers` drawn per
  set), where a cascade escalates what it does in `refcheck bench`; the ExpertQA workload pairs
  claims with other answers' passages, which the embedded checker is sure are unsupported.

    python benchmarks/embedded_speed.py [--answers 200] [--repeats 3] [--minilm-answers 20]
    python benchmarks/embedded_speed.py --pipeline-only [--answers 200] [--repeats 3]
    python benchmarks/embedded_speed.py --pipeline-only --versus no-diagnostics
    python benchmarks/embedded_speed.py --pipeline-only --workload labelled --answers 100 \
        --versus "cascade:embedded[margin,0.1145]>reader"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections import defaultdict

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from refcheck_callbacks.bench.data_dir import data_dir
from refcheck_callbacks.bench.datasets import DATASET_NAMES, load_dataset
from refcheck_callbacks.bench.runner import subsample
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.contract.registry import build_checker
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.engine.pipeline import Pipeline
from refcheck_callbacks.extract.sentences import SentenceExtractor
from refcheck_callbacks.text.spans import sentence_spans
from refcheck_callbacks.types import CheckItem, CheckRequest, Claim, Reference

CLAIMS_PER_ANSWER = 4
REFERENCES_PER_ANSWER = 5
REFERENCE_WORDS = 150
BATCH_ANSWERS = 16
NO_DIAGNOSTICS = "no-diagnostics"
"""`--versus no-diagnostics`: the same pipeline without retrieval diagnostics, in turn."""


def workload(answers: int) -> list[list[CheckItem]]:
    """One list of 4 check items per answer, sharing that answer's 5 references."""
    examples = load_dataset("expertqa")
    claims: dict[str, list[str]] = defaultdict(list)
    passages: list[str] = []
    for example in examples:
        claims[example.response_id or ""].append(example.claim)
        passages += [p for p in example.references if len(p.split()) >= REFERENCE_WORDS // 2]
    unique_passages = list(dict.fromkeys(passages))
    pool = [claim for group in claims.values() for claim in group]
    questions = _expertqa_questions()
    out = []
    for index in range(answers):
        start = index * REFERENCES_PER_ANSWER
        references = [
            # A running suffix keeps every answer's texts distinct (no cache hits).
            " ".join(unique_passages[(start + k) % len(unique_passages)].split()[:REFERENCE_WORDS])
            + f" (copy {index})"
            for k in range(REFERENCES_PER_ANSWER)
        ]
        texts = [
            pool[(index * CLAIMS_PER_ANSWER + k) % len(pool)] for k in range(CLAIMS_PER_ANSWER)
        ]
        refs = [Reference(text=text, id=f"a{index}-r{k}") for k, text in enumerate(references)]
        out.append(
            [
                CheckItem(
                    claim=Claim(text=text),
                    references=refs,
                    question=questions[index % len(questions)],
                    request_id=f"a{index}",
                    claim_index=k,
                )
                for k, text in enumerate(texts)
            ]
        )
    return out


def _expertqa_questions() -> list[str]:
    """ExpertQA's questions, so that diagnostics score every reference and claim against one."""
    path = data_dir() / "expertqa" / "rand_val.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    return list(dict.fromkeys(json.loads(line)["question"] for line in lines if line.strip()))


def labelled_workload(per_set: int) -> list[list[CheckItem]]:
    """Each shared set's claims (`per_set` drawn by response, seeded), each its own answer with
    its own references: the claims `refcheck bench` checks."""
    out = []
    for name in DATASET_NAMES:
        for example in subsample(load_dataset(name), per_set, seed=0):
            references = tuple(
                Reference(text=text, id=f"{example.example_id}-{k}")
                for k, text in enumerate(example.references)
            )
            claim = Claim(text=example.claim)
            out.append(
                [
                    CheckItem(
                        claim=claim,
                        references=references,
                        request_id=example.example_id,
                        claim_index=0,
                    )
                ]
            )
    return out


CLOCK = [time.perf_counter]
"""What a rate divides by: wall time, or with `--clock cpu` the process's CPU time (all its
threads), which other work on a shared machine disturbs far less."""


def learned_rate(checker: EmbeddedChecker, answers: list[list[CheckItem]]) -> float:
    started = CLOCK[0]()
    for first in range(0, len(answers), BATCH_ANSWERS):
        batch = [item for answer in answers[first : first + BATCH_ANSWERS] for item in answer]
        checker.check_batch(batch)
    return sum(len(a) for a in answers) / (CLOCK[0]() - started)


def learned_plus_top1_rate(
    checker: EmbeddedChecker, encoder: SentenceEncoder, answers: list[list[CheckItem]]
) -> float:
    """The learned checker plus what full-MiniLM features on its top segment would cost: one
    encode call per batch for every claim and the segment the static ranking put first."""
    started = CLOCK[0]()
    for first in range(0, len(answers), BATCH_ANSWERS):
        batch = [item for answer in answers[first : first + BATCH_ANSWERS] for item in answer]
        verdicts = checker.check_batch(batch)
        segments = []
        for item, verdict in zip(batch, verdicts, strict=True):
            span = verdict.evidence[0].span if verdict.evidence else None
            text = item.references[verdict.evidence[0].reference_index].text if span else ""
            segments.append(text[span.start : span.end] if span else "")
        encoder.encode([item.claim.text for item in batch] + segments)
    return sum(len(a) for a in answers) / (CLOCK[0]() - started)


def pipeline_run(pipeline: Pipeline, answers: list[list[CheckItem]]) -> tuple[float, float]:
    """Claims per second of the whole pipeline on answers written from the workload's claims,
    and the share of verdicts a cascade's later stages decided (0 for one checker)."""
    requests = [
        CheckRequest(
            answer=" ".join(item.claim.text for item in answer),
            references=answer[0].references,
            question=answer[0].question,
        )
        for answer in answers
    ]

    async def run() -> tuple[int, int]:
        claims = passed_on = 0
        for first in range(0, len(requests), BATCH_ANSWERS):
            results = await pipeline.run(requests[first : first + BATCH_ANSWERS])
            claims += sum(len(result.claims) for result in results)
            verdicts = [v for result in results for v in result.verdicts]
            passed_on += sum(len(getattr(v, "stages", ())) > 1 for v in verdicts)
        return claims, passed_on

    started = CLOCK[0]()
    claims, passed_on = asyncio.run(run())
    return claims / (CLOCK[0]() - started), passed_on / max(1, claims)


def pipeline_report(
    checker: EmbeddedChecker, versus: str | None, answers: list[list[CheckItem]], repeats: int
) -> dict[str, object]:
    """The pipeline's rate with the default checker and, when given, with `versus`, timed
    repeat by repeat in turn so that both see the same machine."""
    pipelines = {"embedded": Pipeline(SentenceExtractor(), checker)}
    if versus == NO_DIAGNOSTICS:
        pipelines[versus] = Pipeline(SentenceExtractor(), checker, diagnostics=False)
    elif versus is not None:
        pipelines[versus] = Pipeline(SentenceExtractor(), build_checker(versus))
    for pipeline in pipelines.values():
        pipeline_run(pipeline, answers[:BATCH_ANSWERS])  # warm up
    runs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for _ in range(repeats):
        for name, pipeline in pipelines.items():
            runs[name].append(pipeline_run(pipeline, answers))
    rates = {name: statistics.median(r for r, _ in done) for name, done in runs.items()}
    report: dict[str, object] = {
        "pipeline_claims_per_s": round(rates["embedded"], 1),
        "pipeline_runs": [round(r, 1) for r, _ in runs["embedded"]],
    }
    if versus is not None:
        report |= {
            "versus": versus,
            "versus_claims_per_s": round(rates[versus], 1),
            "versus_runs": [round(r, 1) for r, _ in runs[versus]],
            "ratio_versus_over_default": round(rates[versus] / rates["embedded"], 3),
            "versus_share_passed_on": round(runs[versus][-1][1], 3),
        }
    return report | {"load_average_1m": round(os.getloadavg()[0], 2)}


def minilm_rate(encoder: SentenceEncoder, answers: list[list[CheckItem]]) -> float:
    started = CLOCK[0]()
    for answer in answers:
        sentences = [
            reference.text[start:end]
            for reference in answer[0].references
            for start, end in sentence_spans(reference.text)
        ]
        encoder.encode([item.claim.text for item in answer] + sentences)
    return sum(len(a) for a in answers) / (CLOCK[0]() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--minilm-answers", type=int, default=20)
    parser.add_argument(
        "--pipeline-only", action="store_true", help="time only the whole offline pipeline"
    )
    parser.add_argument(
        "--versus",
        metavar="SPEC",
        help="with --pipeline-only: also time the pipeline with this checker, in turn",
    )
    parser.add_argument(
        "--workload",
        choices=["expertqa", "labelled"],
        default="expertqa",
        help="with --pipeline-only: ExpertQA answers with other passages, or the labelled sets",
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="divide by wall time (default) or by this process's CPU time",
    )
    args = parser.parse_args()
    if args.clock == "cpu":
        CLOCK[0] = time.process_time
    labelled = args.pipeline_only and args.workload == "labelled"
    answers = labelled_workload(args.answers) if labelled else workload(args.answers)
    checker = EmbeddedChecker()
    checker.check_batch(answers[0])  # load the parameters outside the timing
    if args.pipeline_only:
        print(json.dumps(pipeline_report(checker, args.versus, answers, args.repeats)))
        return
    learned = [learned_rate(checker, answers) for _ in range(args.repeats)]
    encoder = SentenceEncoder(cache_size=0)
    encoder.encode(["warm up"])
    minilm = [minilm_rate(encoder, answers[: args.minilm_answers]) for _ in range(args.repeats)]
    short = SentenceEncoder(max_length=64, batch_size=128, cache_size=0)
    top1 = [
        learned_plus_top1_rate(checker, short, answers[: args.minilm_answers * 4])
        for _ in range(args.repeats)
    ]
    report = {
        "claims": sum(len(a) for a in answers),
        "learned_claims_per_s": round(statistics.median(learned), 1),
        "learned_runs": [round(r, 1) for r in learned],
        "minilm_embedding_claims_per_s": round(statistics.median(minilm), 1),
        "minilm_runs": [round(r, 1) for r in minilm],
        "ratio_learned_over_minilm": round(
            statistics.median(learned) / statistics.median(minilm), 1
        ),
        "learned_plus_full_minilm_top1_claims_per_s": round(statistics.median(top1), 1),
        "learned_plus_full_minilm_top1_runs": [round(r, 1) for r in top1],
        "goal_claims_per_s": 100,
        "cpu_count": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
