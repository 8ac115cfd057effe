"""Probes of the cause rule: requests whose right diagnosis is known by construction.

From WikiQA dev and TREC QA DEV (`relevance_ranking.qa_questions`), with the question, the
"right answer" being a candidate sentence that answers it (RGB's setting):
- `right vs topical`: the right answer against up to 5 topical sentences that do not hold it:
  the claim came from elsewhere, so its cause should be `retrieval_missed`;
- `right vs positives`: the right answer against the sentences that answer: Entailment;
- `wrong vs positives`: the right answer with its first figure changed, against them:
  Contradiction (questions whose answer holds a figure);
- `right vs counterfactual`: the right answer against the answering sentences that state its
  figure, that figure changed in them (a context stating another value): Contradiction, a
  conflict with the context.

From the labelled sets bench loads (`bench.datasets`, no question):
- `swapped references`: each item's claim against the references of an item of another
  group (a seeded derangement of the groups): nothing supports it and nothing bears on it,
  so Entailment should be about 0 and the unsupported claims `retrieval_missed`;
- `planted edit` (`bench.planted_edits`, edits of stated facts only) and `inconsistent
  summary` (SummEdits' label 0): a wrong claim against its own, relevant, document: few of
  the unsupported ones should be `retrieval_missed`; `contradicted` or
  `unsupported_by_relevant_context` are the right causes.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from refcheck_callbacks.bench.checking import shared_reference_requests, subsample
from refcheck_callbacks.bench.datasets import DATASET_NAMES, LabelledExample, load_dataset
from refcheck_callbacks.bench.planted_edits import planted_examples
from refcheck_callbacks.bench.relevance_ranking import QAQuestion
from refcheck_callbacks.types import CheckRequest, Claim, Label, Reference

TOPICAL_REFERENCES = 5
"""Topical sentences without the answer given with it, at most (RGB gives a handful)."""
_FIGURE = re.compile(r"\b\d+\b")


@dataclass
class Probe:
    """Requests of one kind from one source, and the figures that say how they went."""

    name: str
    source: str
    targets: dict[str, str]
    """Figure name (`ProbeFigures.figures`) -> what a right diagnosis gives."""
    requests: list[CheckRequest] = field(default_factory=list)


def changed_figure(text: str) -> tuple[str, str] | None:
    """The first whole number of `text` and another value for it (+3, or +7 above 100)."""
    match = _FIGURE.search(text)
    if match is None:
        return None
    value = int(match.group())
    return match.group(), str(value + (7 if value > 100 else 3))


def _replaced(text: str, figure: str, value: str) -> str:
    return re.sub(rf"\b{re.escape(figure)}\b", value, text)


def _request(question: str | None, claim: str, references: Sequence[str]) -> CheckRequest:
    return CheckRequest(
        answer=claim,
        question=question,
        claims=(Claim(text=claim),),
        references=tuple(Reference(text=text, id=str(i)) for i, text in enumerate(references)),
    )


QA_TARGETS = {
    "right vs topical": {"cause:retrieval_missed": ">= 0.80"},
    "right vs positives": {"label:entailment": ">= 0.80"},
    "wrong vs positives": {"label:contradiction": ">= 0.60"},
    "right vs counterfactual": {"label:contradiction": ">= 0.60"},
}


def qa_probes(questions: Sequence[QAQuestion]) -> list[Probe]:
    """The four QA probes of each split, in `QA_TARGETS` order."""
    probes: dict[tuple[str, str], Probe] = {}
    for question in questions:
        text, positives = question.question, question.positives
        right = positives[0]
        requests = {
            "right vs topical": _request(text, right, question.negatives[:TOPICAL_REFERENCES]),
            "right vs positives": _request(text, right, positives),
        }
        change = changed_figure(right)
        if change is not None:
            edited = [_replaced(passage, *change) for passage in positives]
            stating = [e for e, p in zip(edited, positives, strict=True) if e != p]
            requests["wrong vs positives"] = _request(text, edited[0], positives)
            requests["right vs counterfactual"] = _request(text, right, stating)
        for name, request in requests.items():
            key = (question.split, name)
            probes.setdefault(key, Probe(name, question.split, QA_TARGETS[name]))
            probes[key].requests.append(request)
    splits = list(dict.fromkeys(question.split for question in questions))
    return sorted(
        probes.values(), key=lambda p: (list(QA_TARGETS).index(p.name), splits.index(p.source))
    )


def swapped(examples: Sequence[LabelledExample], seed: int = 0) -> list[LabelledExample]:
    """Each example with the references of a (seeded) example of another group: the groups,
    shuffled, each take the next one's references (a derangement: none keeps its own). Empty
    with fewer than two groups."""
    members: dict[str, list[LabelledExample]] = defaultdict(list)
    for example in examples:
        members[example.group].append(example)
    groups = list(members)
    if len(groups) < 2:
        return []
    rng = random.Random(seed)
    rng.shuffle(groups)
    following = {group: groups[(i + 1) % len(groups)] for i, group in enumerate(groups)}
    return [
        example.model_copy(
            update={"references": rng.choice(members[following[example.group]]).references}
        )
        for example in examples
    ]


def _probe(
    name: str, source: str, targets: dict[str, str], examples: list[LabelledExample]
) -> Probe:
    requests, _ = shared_reference_requests(examples)
    return Probe(name, source, targets, requests)


def set_probes(
    limit: int, seed: int = 0, root: Path | None = None, names: Sequence[str] = DATASET_NAMES
) -> tuple[list[Probe], dict[str, str]]:
    """The swapped-reference and planted-edit probes of each set that loads (at most `limit`
    items each, drawn by whole response), and SummEdits' inconsistent summaries; and the sets
    that did not load, with the reason."""
    swapped_probes, planted, summaries, unavailable = [], [], [], {}
    for name in names:
        try:
            examples = load_dataset(name, root)
        except (OSError, ValueError, KeyError) as exc:
            unavailable[f"probes:{name}"] = f"{type(exc).__name__}: {exc}"
            continue
        swapped_probes.append(
            _probe(
                "swapped references",
                name,
                {"unsupported:retrieval_missed": "high", "label:entailment": "~0"},
                swapped(subsample(examples, limit, seed), seed),
            )
        )
        edits = [e for e in planted_examples(examples) if e.label is Label.CONTRADICTION]
        planted.append(
            _probe(
                "planted edit",
                name,
                {"unsupported:retrieval_missed": "low"},
                subsample(edits, limit, seed),
            )
        )
        if name == "summedits":
            inconsistent = [e for e in examples if e.supported is False]
            summaries.append(
                _probe(
                    "inconsistent summary",
                    name,
                    {"unsupported:retrieval_missed": "low"},
                    subsample(inconsistent, limit, seed),
                )
            )
    return swapped_probes + planted + summaries, unavailable
