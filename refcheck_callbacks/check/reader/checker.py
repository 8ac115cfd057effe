"""The learned reader: a MiniLM cross-encoder trained here reads a claim against its best evidence.

The embedded checker matches words and vectors; it cannot read "painted by Michelangelo"
against "painted by Leonardo da Vinci" as a conflict when no word position lines up. The
reader is a 6-layer MiniLM with a 3-way head (supported / not stated / conflicting), trained
by `scripts/train_reader.py` (docs/reader.md), that reads the claim with the few segments the
embedded checker ranks best (`reader.inputs`) in one pass.

Its folder is a plain Hugging Face 3-way NLI classifier, so the same weights also run as
`nli:PATH` (one segment per pair, RefChecker's merge) and on a GPU behind `refcheck serve`.
This checker is the reader's own reading: one pair per claim, then, for a claim read as
Contradiction only, one pair per evidence segment, so the verdict cites the segment that
conflicts (the label rule: a Contradiction names its statement). The pipeline's conflict stage
then holds it to the bar every 3-way model's Contradiction meets.

A reader trained with `--corrects-embedded` (`reader.prior`) starts from the embedded
checker's support logit and reads only what to change in it; its folder says so, and this
checker then runs the embedded checker on the same claims for that logit.

Like the embedded checker, it screens every claim with the stated-fact finder, so a figure,
date or name that the references state otherwise is a Contradiction even where the reader
read the claim as supported: a 6-layer reader trained on a few thousand pairs reads "voted on
Tuesday" against "voted on Monday" as the same sentence, and the conflict stage never reopens
an Entailment.

    RefCheckMonitor(checker="reader")  # the reader shipped in the wheel
    RefCheckMonitor(checker="cascade:embedded[margin,0.2]>reader:/models/reader")
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from refcheck_callbacks.check.base import SyncChecker
from refcheck_callbacks.check.conflict.base import contradiction
from refcheck_callbacks.check.conflict.stated_facts import StatedFactFinder
from refcheck_callbacks.check.merge import segment_evidence
from refcheck_callbacks.check.nli.checker import NLIChecker
from refcheck_callbacks.check.nli.loading import NLIDtype, pick_device
from refcheck_callbacks.check.reader.inputs import (
    MAX_LENGTH,
    EvidenceRanker,
    RankedReferences,
    claim_input,
    evidence_input,
)
from refcheck_callbacks.check.reader.prior import SupportPrior, corrected, corrects_embedded
from refcheck_callbacks.check.segments import Segment
from refcheck_callbacks.errors import LabelSchemeError, ModelNotFoundError
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import CheckItem, Label, Verdict

SHIPPED_READER = Path(__file__).resolve().parent / "model"
"""The reader the wheel carries: int8 weights trained on every shared set
(`scripts/train_reader.py --export`), its config and tokenizer; `reader` with no path loads it."""


def _shipped_reader() -> Path:
    if not (SHIPPED_READER / "config.json").is_file():
        raise ModelNotFoundError(
            f"no reader is shipped in {SHIPPED_READER} (a build without its weights): train "
            "one with scripts/train_reader.py --export, or pass reader:PATH"
        )
    return SHIPPED_READER


class ReaderChecker(SyncChecker):
    """Labels claims with a trained reader; see the module docstring.

    Args:
        model: the reader's folder (written by `scripts/train_reader.py --export`); by default
            the one shipped in the wheel (`SHIPPED_READER`).
        device: "auto", "cpu" or a torch device string.
        dtype: "float32", "int8" (CPU: linear layers quantized when loaded), "bfloat16",
            "float16" or "auto": int8 on a CPU (its weights are int8-rounded already, and
            every figure in docs/reader.md was measured so), else as `NLIChecker` picks.
        ranker: the evidence ranker (shared with other readers); built when not given.
    """

    name = "reader"
    screens_with = StatedFactFinder.name
    """The conflict finder it runs on every claim itself (`check_batch`), so the pipeline's
    conflict stage does not run it again on its Neutral verdicts."""

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        device: str = "auto",
        dtype: NLIDtype = "auto",
        ranker: EvidenceRanker | None = None,
    ) -> None:
        if model is None:
            model = _shipped_reader()
        if dtype == "auto" and pick_device(device) == "cpu":
            dtype = "int8"
        self.reader = NLIChecker(
            model, family="nli", device=device, dtype=dtype, max_length=MAX_LENGTH
        )
        if self.reader.scheme.binary:
            raise LabelSchemeError(
                f"a reader is a 3-way classifier (entailment / neutral / contradiction); "
                f"{model} has two classes"
            )
        self.model_name = self.reader.model_name
        self.ranker = ranker or EvidenceRanker()
        self.prior = SupportPrior() if corrects_embedded(model) else None
        """For a reader trained to correct the embedded checker (`reader.prior`)."""
        self._stated_facts = StatedFactFinder()

    support_threshold = 0.5
    """Where a cascade measures the reader's margin from. The label is the likeliest class, so
    a Contradiction's P(entailment) is at most 0.5; an Entailment can sit below 0.5 when the
    other two classes split the rest (not yet seen with a trained reader: see docs/reader.md)."""

    def check_batch(self, items: Sequence[CheckItem]) -> list[Verdict]:
        ranked: dict[str, RankedReferences] = {}
        evidence: list[list[Segment]] = []
        for item in items:
            if item.request_id not in ranked:
                ranked[item.request_id] = self.ranker.prepare([r.text for r in item.references])
            evidence.append(self.ranker.best(item.claim.text, ranked[item.request_id]))
        read = [i for i, segments in enumerate(evidence) if segments]
        rows = self.reader.classify_pairs(
            [evidence_input(evidence[i]) for i in read],
            [claim_input(items[i].claim.text, items[i].question) for i in read],
        )
        if self.prior is not None:
            logits = self.prior.for_items([items[i] for i in read])
            rows = [corrected(row, logit) for row, logit in zip(rows, logits, strict=True)]
        verdicts = [
            Verdict(label=Label.NEUTRAL, confidence=1.0, explanation="no reference text")
        ] * len(items)
        for index, probabilities in zip(read, rows, strict=True):
            verdicts[index] = self._verdict(items[index], evidence[index], probabilities)
        stated = self._stated_facts.find_batch([items[i] for i in read])
        for index, conflict in zip(read, stated, strict=True):
            if conflict is not None:
                verdicts[index] = contradiction(verdicts[index], items[index], conflict)
        return verdicts

    def _verdict(
        self, item: CheckItem, segments: list[Segment], probabilities: dict[Label, float]
    ) -> Verdict:
        label = max(probabilities, key=probabilities.__getitem__)
        cited = segments[0]
        if label is Label.CONTRADICTION:
            cited = self._conflicting_segment(item, segments)
        return Verdict(
            label=label,
            confidence=probabilities[label],
            probabilities=probabilities,
            evidence=[segment_evidence(cited, item.references, probabilities[label])],
            explanation=f"the reader{' correcting the embedded checker' if self.prior else ''} "
            f"read {len(segments)} evidence segment(s): {label.value}",
        )

    def _conflicting_segment(self, item: CheckItem, segments: list[Segment]) -> Segment:
        """The evidence segment the reader, reading each alone, finds most contradicting."""
        if len(segments) == 1:
            return segments[0]
        claim = claim_input(item.claim.text, item.question)
        alone = self.reader.classify_pairs(
            [evidence_input([segment]) for segment in segments], [claim] * len(segments)
        )
        best = max(range(len(segments)), key=lambda i: alone[i][Label.CONTRADICTION])
        logger.debug("refcheck: reader contradiction cites segment %d of %d", best, len(segments))
        return segments[best]
