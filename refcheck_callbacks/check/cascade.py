"""A cascade of checkers: the expensive one only sees the claims the cheap one is unsure of.

An LLM judge costs 100 to 1,000 times more per claim than the embedded checker and takes
seconds instead of milliseconds. Most claims are easy: a cheap checker decides them with high
confidence and is right. So every claim goes to the first stage; a claim whose verdict is less
confident than that stage's `threshold` (or carries a label in its `escalate`, or failed) goes
on to the next stage, and so on; the last stage decides whatever reaches it. The verdict keeps
the path: `Verdict.stages` lists each stage's label, confidence and call time, the last entry
being the stage that decided, and its usage sums every stage's. The exporter turns the paths
into `refcheck.cascade.escalations` by stage and per-stage durations.

A stage measures how sure it is in one of two ways (`by`):
- "confidence": `Verdict.confidence`, the probability of the verdict's label;
- "margin": how far P(entailment) is from the point where the checker starts saying
  Entailment (its `support_threshold`, 0.5 for checkers that declare none), whatever the label:
  the certainty of the supported / unsupported decision that hallucination rates count. On the
  embedded checker it needs fewer escalations for the same balanced accuracy
  (benchmarks/cascade.py, docs/cascade.md): its neutral / contradiction split is the least
  sure part of a verdict, and the least relevant to a hallucination rate.

Thresholds are fitted on labelled claims with `refcheck bench --fit-cascade` (see
`bench.cascade_fit`), for a target share of escalated claims or a target balanced accuracy; a
threshold means nothing across checkers, since each calibrates its probabilities its own way.

    CascadeChecker([CascadeStage(EmbeddedChecker(), threshold=0.8), LLMChecker("gpt-4o-mini")])
    # spec: cascade:embedded[0.8]>llm:gpt-4o-mini
    # by margin, and every contradiction to the judge: embedded[margin,0.12,contradiction]
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from refcheck_callbacks.contract.components import Checker, limit_spend, preload
from refcheck_callbacks.contract.registry import CHECKERS, accepts_api_base, build
from refcheck_callbacks.errors import ComponentSpecError
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import CheckItem, Label, StageVerdict, Usage, Verdict

Certainty = Literal["confidence", "margin"]


def certainty(verdict: Verdict, by: Certainty, support_threshold: float = 0.5) -> float:
    """How sure a verdict is, the way a stage measures it (see the module docstring)."""
    if by == "confidence":
        return verdict.confidence
    probabilities = verdict.probabilities or {}
    if Label.ENTAILMENT in probabilities:
        support = probabilities[Label.ENTAILMENT]
    else:
        entailed = verdict.label is Label.ENTAILMENT
        support = verdict.confidence if entailed else 1.0 - verdict.confidence
    return abs(support - support_threshold)


def support_threshold(checker: Checker) -> float:
    """P(entailment) from which `checker` says Entailment (0.5 when it does not say)."""
    return float(getattr(checker, "support_threshold", 0.5))


@dataclass(frozen=True)
class CascadeStage:
    """One checker of a cascade and when it passes a claim on."""

    checker: Checker
    threshold: float = 0.0
    """Claims whose verdict is less sure than this go on to the next stage."""
    escalate: frozenset[Label] = field(default_factory=frozenset)
    """Claims this stage labels with one of these go on too (e.g. every Contradiction, so an
    alert is only raised on the strongest checker's word)."""
    name: str | None = None
    """The stage's name in verdicts and metrics; default the checker's name."""
    by: Certainty = "confidence"
    """How sureness is measured: the label's probability, or P(entailment)'s margin."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"a stage threshold is a confidence in [0, 1], got {self.threshold}")
        if self.by not in ("confidence", "margin"):
            raise ValueError(f"a stage measures by 'confidence' or 'margin', not {self.by!r}")

    def passes_on(self, verdict: Verdict) -> bool:
        return (
            verdict.label is None
            or certainty(verdict, self.by, support_threshold(self.checker)) < self.threshold
            or verdict.label in self.escalate
        )


def _named(stages: Iterable[CascadeStage | Checker]) -> list[tuple[str, CascadeStage]]:
    """Each stage with a name unique in the cascade (a repeated name gets "-2", "-3"...)."""
    named: list[tuple[str, CascadeStage]] = []
    for stage in stages:
        stage = stage if isinstance(stage, CascadeStage) else CascadeStage(stage)
        base = stage.name or stage.checker.name
        taken = {name for name, _ in named}
        name, count = base, 1
        while name in taken:
            count += 1
            name = f"{base}-{count}"
        named.append((name, stage))
    return named


class CascadeChecker:
    """Checks each claim with the first stage that is confident about it; see the module doc.

    Args:
        stages: checkers in the order claims meet them, as `CascadeStage`s (a bare checker is a
            stage with threshold 0, which passes on only failures); the last stage's threshold
            and labels are ignored: it decides whatever reaches it.

    A stage that raises is read as having failed on each claim it held: those claims go on to
    the next stage, and at the last stage each becomes a failed verdict, so one broken stage
    never fails the claims another stage decided.
    """

    def __init__(self, stages: Sequence[CascadeStage | Checker]) -> None:
        if len(stages) < 2:
            raise ValueError("a cascade needs at least two stages")
        self.stages = _named(stages)
        self.name = "cascade(" + ">".join(name for name, _ in self.stages) + ")"
        self.needs_references = any(
            getattr(stage.checker, "needs_references", True) for _, stage in self.stages
        )

    def limit_spend(self, ledger: object) -> None:
        """Hold the LLM stages' calls to a judge budget (`llm.budget`): the others make none."""
        for _, stage in self.stages:
            limit_spend(stage.checker, ledger)

    def preload(self) -> None:
        """Load every stage that loads lazily."""
        for _, stage in self.stages:
            preload(stage.checker)

    async def check(self, items: Sequence[CheckItem]) -> list[Verdict]:
        decided: list[Verdict | None] = [None] * len(items)
        paths: list[list[StageVerdict]] = [[] for _ in items]
        usage: list[Usage | None] = [None] * len(items)
        pending = list(range(len(items)))
        for position, (name, stage) in enumerate(self.stages):
            if not pending:
                break
            last = position == len(self.stages) - 1
            verdicts, seconds = await self._run(name, stage, [items[i] for i in pending])
            passed_on = []
            for index, verdict in zip(pending, verdicts, strict=True):
                paths[index].append(
                    StageVerdict(
                        stage=name,
                        label=verdict.label,
                        confidence=verdict.confidence,
                        seconds=seconds,
                    )
                )
                if verdict.usage is not None:
                    usage[index] = verdict.usage + (usage[index] or Usage())
                if not last and stage.passes_on(verdict):
                    passed_on.append(index)
                else:
                    decided[index] = verdict
            pending = passed_on
        return [
            verdict.model_copy(update={"stages": tuple(paths[i]), "usage": usage[i]})
            for i, verdict in enumerate(decided)
            if verdict is not None
        ]

    @staticmethod
    async def _run(
        name: str, stage: CascadeStage, items: list[CheckItem]
    ) -> tuple[list[Verdict], float]:
        started = time.perf_counter()
        try:
            verdicts = await stage.checker.check(items)
            if len(verdicts) != len(items):
                raise ValueError(f"returned {len(verdicts)} verdicts for {len(items)} claims")
        except Exception as exc:
            logger.warning("refcheck: cascade stage %s failed: %r", name, exc)
            failed = Verdict(label=None, error=f"cascade stage {name} failed: {exc!r}")
            verdicts = [failed] * len(items)
        return verdicts, time.perf_counter() - started


_STAGE = re.compile(r"^(?P<spec>.+?)(?:\[(?P<options>[^\[\]]*)\])?$")


def from_spec(stages: str, api_base: str | None = None) -> CascadeChecker:
    """The cascade a `cascade:` spec names (the registry's `cascade` kind): stages separated by
    `>`, each a checker spec with optional `[T]`, `[margin,T]` and labels it always passes on.
    `api_base` reaches the stages that take one."""
    spec = f"cascade:{stages}"
    built = []
    for text in stages.split(">"):
        match = _STAGE.match(text.strip())
        if match is None or match["spec"].startswith("cascade"):
            raise ComponentSpecError(f"{spec!r}: {text!r} is not a stage spec")
        options = [o.strip() for o in (match["options"] or "").split(",") if o.strip()]
        numbers = [o for o in options if re.fullmatch(r"[0-9.]+", o)]
        by: Certainty = "margin" if "margin" in options else "confidence"
        labels = [o.lower() for o in options if o not in numbers and o != "margin"]
        unknown = sorted(set(labels) - {label.value for label in Label})
        if len(numbers) > 1 or unknown:
            raise ComponentSpecError(
                f"{spec!r}: stage options are one threshold, `margin` and labels "
                f"(entailment, neutral, contradiction), got {match['options']!r}"
            )
        stage_api = api_base if accepts_api_base(CHECKERS, match["spec"]) else None
        checker = build(CHECKERS, match["spec"], stage_api)
        try:
            stage = CascadeStage(
                checker,
                threshold=float(numbers[0]) if numbers else 0.0,
                escalate=frozenset(Label(label) for label in labels),
                by=by,
            )
        except ValueError as exc:
            raise ComponentSpecError(f"{spec!r}: {exc}") from exc
        built.append(stage)
    try:
        return CascadeChecker(built)
    except ValueError as exc:
        raise ComponentSpecError(f"{spec!r}: {exc}") from exc
