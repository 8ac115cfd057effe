"""How bench puts labelled claims through the production pipeline: seeded samples by whole
response, claims that share references grouped into one request, one verdict per example.

Apart from the runner (`bench.runner`) so that the parts it runs (the relevance bench,
`bench.relevance_bench`) can use them without importing it back.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence

from refcheck_callbacks.bench.datasets import LabelledExample
from refcheck_callbacks.contract.components import Checker
from refcheck_callbacks.contract.registry import ConflictSource
from refcheck_callbacks.engine.pipeline import DEFAULT_CONFLICT, Pipeline, StageTimeouts
from refcheck_callbacks.extract.sentences import SentenceExtractor
from refcheck_callbacks.support.progress import Progress
from refcheck_callbacks.types import CheckRequest, Claim, Outcome, Reference, Verdict


def subsample(examples: list[LabelledExample], limit: int, seed: int = 0) -> list[LabelledExample]:
    """About `limit` examples drawn by whole response (seeded), in their original order.

    The first N lines of a file are often one class or one source; whole responses keep the
    response-level correlation meaningful.
    """
    if len(examples) <= limit:
        return examples
    by_unit: dict[str, list[int]] = defaultdict(list)
    for position, example in enumerate(examples):
        by_unit[example.response_id or example.example_id].append(position)
    units = list(by_unit)
    random.Random(seed).shuffle(units)
    chosen: list[int] = []
    for unit in units:
        if len(chosen) >= limit:
            break
        chosen.extend(by_unit[unit])
    return [examples[i] for i in sorted(chosen)]


def bench_pipeline(checker: Checker, conflict: ConflictSource = DEFAULT_CONFLICT) -> Pipeline:
    """The production pipeline (default diagnostics included) with no check deadline: a slow
    checker is measured, not cut off."""
    return Pipeline(
        SentenceExtractor(), checker, timeouts=StageTimeouts(check=3600.0), conflict=conflict
    )


def shared_reference_requests(
    examples: Sequence[LabelledExample],
) -> tuple[list[CheckRequest], list[list[int]]]:
    """Examples that share their references as one request with several claims, as the claims
    of one answer would be (a checker then reads each document once); and the positions of
    each request's examples."""
    members: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for position, example in enumerate(examples):
        members[tuple(example.references)].append(position)
    requests = [
        CheckRequest(
            answer=" ".join(examples[p].claim for p in positions),
            claims=[Claim(text=examples[p].claim) for p in positions],
            references=[Reference(text=t, id=str(i)) for i, t in enumerate(references)],
        )
        for references, positions in members.items()
    ]
    return requests, list(members.values())


async def check_examples(
    checker: Checker,
    examples: Sequence[LabelledExample],
    batch_size: int,
    progress: Progress,
    conflict: ConflictSource = DEFAULT_CONFLICT,
) -> list[Verdict | None]:
    """One verdict per example (None where the checker failed), in order.

    Examples of a batch that share their references become one request with several claims,
    as the claims of one answer would: a checker then reads each document once.
    """
    pipeline = bench_pipeline(checker, conflict)
    verdicts: list[Verdict | None] = []
    for start in range(0, len(examples), batch_size):
        batch = examples[start : start + batch_size]
        requests, members = shared_reference_requests(batch)
        found: list[Verdict | None] = [None] * len(batch)
        results = await pipeline.run(requests)
        for positions, result in zip(members, results, strict=True):
            if result.outcome in (Outcome.CHECKED, Outcome.PARTIAL):
                for position, verdict in zip(positions, result.verdicts, strict=True):
                    found[position] = verdict if verdict.label is not None else None
        verdicts.extend(found)
        progress.advance(len(batch))
    return verdicts
