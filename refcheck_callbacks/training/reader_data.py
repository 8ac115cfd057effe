"""The reader's training pairs: the shared sets' labelled claims and synthetic claims made from
the same sets' references, each with its evidence ranked as the checker will rank it.

- Labelled claims (`bench.datasets`): a 3-way gold label where the set has one (Climate-FEVER,
  WiCE); otherwise supported reads as Entailment and unsupported as "not Entailment"
  (`NOT_SUPPORTED`): SummEdits or ExpertQA do not say whether an unsupported claim conflicts
  with its reference or is merely not stated, and the loss does not pretend to know.
- Synthetic claims (`synthetic_pairs`): sentences of each set's distinct reference documents,
  each turned into a supported, conflicting or not-stated claim. The document "on the same
  topic" a not-stated claim comes from is another document of the same group (the same
  question or source) when there is one, else the one of `NEIGHBOUR_CANDIDATES` random
  documents of the set that shares most words: a bounded search, so building stays linear in
  the data. Its sentence must share less than half its content words with the document read.
- Evidence: the segments `EvidenceRanker` picks for the claim, as the checker picks them.
- Prior (`corrects_embedded`): the embedded checker's support logit for the claim against the
  same references (`reader.prior`), which a correcting reader starts from.

A leave-one-set-out fold drops the held-out set and every group it shares with the others
(BEGIN and FaithDial quote the same Wikipedia passages), so no text is on both sides.
Everything is seeded by `ReaderDataPlan.seed`; the same plan gives the same pairs.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from refcheck_callbacks.bench.datasets import DATASET_NAMES, LabelledExample, load_dataset
from refcheck_callbacks.check.reader.inputs import (
    EvidenceRanker,
    RankedReferences,
    evidence_input,
)
from refcheck_callbacks.check.reader.prior import SupportPrior
from refcheck_callbacks.text.lexical import content_tokens
from refcheck_callbacks.text.spans import sentence_spans
from refcheck_callbacks.training.synthetic_pairs import (
    EDITS,
    MIN_WORDS,
    Sentence,
    names_in,
    synthetic_claim,
)
from refcheck_callbacks.types import Label

NOT_SUPPORTED = -1
"""The target of a claim gold calls unsupported without saying neutral or contradiction."""
TARGETS = {Label.ENTAILMENT: 0, Label.NEUTRAL: 1, Label.CONTRADICTION: 2}
"""Class index of each label (`reader.inputs.LABELS`)."""
MAX_SENTENCE_WORDS = 60
NEIGHBOUR_CANDIDATES = 8
PRIOR_CHUNK = 256
"""Pairs scored by the embedded checker at a time (its prepared documents stay bounded)."""


class ReaderExample(BaseModel):
    """One training pair: the inputs as the reader reads them, and what it should say."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    evidence: str
    claim: str
    target: int
    """0 entailment, 1 neutral, 2 contradiction, `NOT_SUPPORTED` either of the last two."""
    dataset: str
    kind: str
    """"labelled", or the synthetic kind (`synthetic_pairs.EDITS`)."""
    prior: float | None = None
    """The embedded checker's support logit (`reader.prior`), for a correcting reader."""


class ReaderDataPlan(BaseModel):
    """What goes into the training pairs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    datasets: tuple[str, ...] = DATASET_NAMES
    held_out: str | None = None
    """The set a leave-one-set-out fold tests on: left out, with every group it shares."""
    labelled_per_set: int = 1500
    synthetic_per_set: int = 1500
    hold_out_kinds: tuple[str, ...] = ()
    """Synthetic kinds never generated (e.g. the planted edits' figure, date, name)."""
    corrects_embedded: bool = False
    """Give every pair the embedded checker's support logit (`ReaderExample.prior`)."""
    seed: int = 0

    def kinds(self) -> tuple[str, ...]:
        unknown = set(self.hold_out_kinds) - set(EDITS)
        if unknown:
            raise ValueError(f"unknown synthetic kinds {sorted(unknown)}; known: {list(EDITS)}")
        return tuple(kind for kind in EDITS if kind not in self.hold_out_kinds)


def target_of(example: LabelledExample) -> int | None:
    if example.label is not None:
        return TARGETS[example.label]
    if example.supported is None:
        return None
    return TARGETS[Label.ENTAILMENT] if example.supported else NOT_SUPPORTED


class _Evidence:
    """Ranked evidence, keeping the last request's prepared references (examples of one
    document come together in the sets, and memory stays bounded)."""

    def __init__(self, ranker: EvidenceRanker) -> None:
        self.ranker = ranker
        self._key: tuple[str, ...] | None = None
        self._prepared: RankedReferences | None = None

    def __call__(self, claim: str, references: Sequence[str]) -> str:
        key = tuple(references)
        if key != self._key or self._prepared is None:
            self._key, self._prepared = key, self.ranker.prepare(references)
        return evidence_input(self.ranker.best(claim, self._prepared))


def labelled_pair(example: LabelledExample, evidence: _Evidence) -> ReaderExample | None:
    """The training pair of a labelled claim; None when gold says nothing usable."""
    target = target_of(example)
    if target is None:
        return None
    return ReaderExample(
        evidence=evidence(example.claim, example.references),
        claim=example.claim,
        target=target,
        dataset=example.dataset,
        kind="labelled",
    )


def labelled_pairs(
    examples: Sequence[LabelledExample], ranker: EvidenceRanker
) -> list[ReaderExample]:
    """The training pairs of labelled claims, in order, each with its ranked evidence."""
    evidence = _Evidence(ranker)
    pairs = (labelled_pair(example, evidence) for example in examples)
    return [pair for pair in pairs if pair is not None]


def _sampled(items: list[LabelledExample], limit: int, rng: random.Random) -> list[LabelledExample]:
    if len(items) <= limit:
        return items
    return [items[i] for i in sorted(rng.sample(range(len(items)), limit))]


def _sentences(document: str) -> list[str]:
    spans = (" ".join(document[a:b].split()) for a, b in sentence_spans(document))
    return [s for s in spans if MIN_WORDS <= len(s.split()) <= MAX_SENTENCE_WORDS]


def _words(text: str) -> set[str]:
    return set(content_tokens(text))


def _neighbour(
    index: int, documents: list[str], groups: list[str], by_group: dict[str, list[int]],
    rng: random.Random,
) -> int:  # fmt: skip
    """Another document on the same topic (see the module docstring)."""
    same = [i for i in by_group[groups[index]] if i != index]
    if same:
        return rng.choice(same)
    words = _words(documents[index])
    candidates = [rng.randrange(len(documents)) for _ in range(NEIGHBOUR_CANDIDATES)]
    candidates = [i for i in candidates if i != index] or [(index + 1) % len(documents)]
    return max(candidates, key=lambda i: len(words & _words(documents[i])))


def _other_sentence(document_words: set[str], sentences: list[str], rng: random.Random) -> str:
    """A sentence sharing less than half its content words with the document read."""
    for candidate in rng.sample(sentences, min(len(sentences), 4)):
        words = _words(candidate)
        if words and 2 * len(words & document_words) < len(words):
            return candidate
    return ""


Sourced = tuple[ReaderExample, list[str]]
"""A training pair and the references it was drawn against."""


def _synthetic(
    name: str, examples: list[LabelledExample], plan: ReaderDataPlan, evidence: _Evidence,
    rng: random.Random,
) -> Iterator[Sourced]:  # fmt: skip
    documents: list[str] = []
    groups: list[str] = []
    seen: set[str] = set()
    for example in examples:
        for text in example.references:
            if text not in seen:
                seen.add(text)
                documents.append(text)
                groups.append(example.group)
    if len(documents) < 2:
        return
    by_group: dict[str, list[int]] = {}
    for index, group in enumerate(groups):
        by_group.setdefault(group, []).append(index)
    kinds = plan.kinds()
    for _ in range(plan.synthetic_per_set):
        index = rng.randrange(len(documents))
        sentences = _sentences(documents[index])
        if not sentences:
            continue
        neighbour = _neighbour(index, documents, groups, by_group, rng)
        position = rng.randrange(len(sentences))
        others = _sentences(documents[neighbour])
        sentence = Sentence(
            text=sentences[position],
            following=sentences[position + 1] if position + 1 < len(sentences) else None,
            other=_other_sentence(_words(documents[index]), others, rng) if others else "",
            other_names=names_in(" ".join(others[:8])),
        )
        made = synthetic_claim(sentence, rng, kinds)
        if made is not None:
            pair = ReaderExample(
                evidence=evidence(made.claim, [documents[index]]),
                claim=made.claim,
                target=TARGETS[made.label],
                dataset=name,
                kind=made.kind,
            )
            yield pair, [documents[index]]


def build_examples(
    plan: ReaderDataPlan, ranker: EvidenceRanker, root: Path | None = None
) -> list[ReaderExample]:
    """Every training pair of `plan`, labelled first then synthetic, set by set."""
    rng = random.Random(plan.seed)
    evidence = _Evidence(ranker)
    excluded: set[str] = set()
    if plan.held_out is not None:
        excluded = {example.group for example in load_dataset(plan.held_out, root)}
    built: list[Sourced] = []
    for name in plan.datasets:
        if name == plan.held_out:
            continue
        examples = [e for e in load_dataset(name, root) if e.group not in excluded]
        labelled = [e for e in examples if target_of(e) is not None]
        for example in _sampled(labelled, plan.labelled_per_set, rng):
            pair = labelled_pair(example, evidence)
            assert pair is not None
            built.append((pair, list(example.references)))
        built += _synthetic(name, examples, plan, evidence, rng)
    if plan.corrects_embedded:
        return _with_priors(built)
    return [pair for pair, _ in built]


def _with_priors(built: Sequence[Sourced]) -> list[ReaderExample]:
    prior = SupportPrior()
    out: list[ReaderExample] = []
    for start in range(0, len(built), PRIOR_CHUNK):
        chunk = built[start : start + PRIOR_CHUNK]
        logits = prior.for_pairs([(pair.claim, references) for pair, references in chunk])
        out += [
            pair.model_copy(update={"prior": logit})
            for (pair, _), logit in zip(chunk, logits, strict=True)
        ]
    return out


def write_examples(examples: Sequence[ReaderExample], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for example in examples:
            out.write(example.model_dump_json() + "\n")


def read_examples(path: Path) -> list[ReaderExample]:
    with path.open(encoding="utf-8") as lines:
        return [ReaderExample.model_validate(json.loads(line)) for line in lines if line.strip()]
