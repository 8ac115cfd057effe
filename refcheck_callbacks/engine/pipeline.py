"""One batch of requests through redact -> prepare -> extract -> check -> conflict -> calibrate ->
diagnose -> aggregate.

Pure async code with no queue: the monitor's worker drives it. Failures stay with the request
that caused them: a stage that raises or overruns its deadline on a batch is tried again one
request at a time (`engine.stage`), so one poisonous answer cannot fail or time out its
neighbours. A request whose redact hook fails is withheld: its text is dropped from the result
and nothing of it is checked, sent to a judge or exported.

Text preparation (`extract.prepare`) blanks citation markers and markdown before extraction
and tidies each claim after it; the conflict stage (`check.conflict`) then gives the labels
one meaning whatever the checker: a Contradiction names a conflicting reference statement.
Diagnostics (`check.diagnose`, docs/diagnostics.md) then score each reference's relevance,
mark what the answer used and give each unsupported claim a cause; a failure there costs the
result its diagnostics only, never its verdicts. With a relevance judge (`relevance="llm:MODEL"`)
the answers of a batch are judged concurrently, one call each, on this loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from refcheck_callbacks.check.calibration.file import Calibration, identity_of
from refcheck_callbacks.check.calibration.points import relabel
from refcheck_callbacks.check.conflict.stage import settle
from refcheck_callbacks.check.diagnose.stage import Diagnosis, Diagnostics
from refcheck_callbacks.check.relevance.judged import JudgedRelevance
from refcheck_callbacks.check.relevance.selection import RelevanceSource, relevance_judge
from refcheck_callbacks.contract.components import Checker, ConflictFinder, Extraction, Extractor
from refcheck_callbacks.contract.registry import ConflictSource, conflict_finder
from refcheck_callbacks.engine import aggregate
from refcheck_callbacks.engine.aggregate import Aggregator
from refcheck_callbacks.engine.redaction import Redactor, Withheld, redacted
from refcheck_callbacks.engine.stage import StageCall, StageFailure, run_stage
from refcheck_callbacks.errors import (
    CheckError,
    ConfigurationError,
    ExtractionError,
    StageOutputError,
)
from refcheck_callbacks.extract.base import first_claims
from refcheck_callbacks.extract.prepare import for_extraction, prepared_claims
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.text.markup import Markup, markup
from refcheck_callbacks.types import (
    CheckItem,
    CheckRequest,
    CheckResult,
    Claim,
    Label,
    Outcome,
    Placement,
    Usage,
    Verdict,
)

T = TypeVar("T")
DEFAULT_CONFLICT = "embedded"
"""The conflict stage every checker's verdicts go through unless the app names another: the
offline stated-fact finder."""


@dataclass
class _Job:
    """A request's progress through the stages."""

    request: CheckRequest
    claims: list[Claim] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    outcome: Outcome | None = None
    message: str | None = None
    error_type: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    stage_started: dict[str, float] = field(default_factory=dict)
    usage: Usage | None = None
    markup: Markup | None = None
    """The answer's formatting, once its claims are to be extracted here."""
    diagnosis: Diagnosis | None = None

    def for_extraction(self) -> CheckRequest:
        """The request as the extractor reads it: formatting blanked (`extract.prepare`)."""
        if self.markup is None:
            self.markup = markup(self.request.answer)
        return for_extraction(self.request, self.markup)

    @property
    def open(self) -> bool:
        return self.outcome is None

    def end(self, outcome: Outcome, message: str, error_type: str | None = None) -> None:
        self.outcome, self.message, self.error_type = outcome, message, error_type

    def add_usage(self, usage: Usage | None) -> None:
        if usage is not None:
            self.usage = usage if self.usage is None else self.usage + usage

    def add_notes(self, notes: Sequence[str]) -> None:
        if notes:
            self.request = self.request.model_copy(update={"notes": (*self.request.notes, *notes)})

    def extraction(self) -> Extraction:
        """What the extract stage gave this request, as the extractor protocol says it."""
        if self.open:
            return Extraction(claims=self.claims, usage=self.usage)
        return Extraction(error=self.message, error_type=self.error_type, usage=self.usage)


@dataclass(frozen=True)
class StageTimeouts:
    """Seconds each stage may take for one batch. A batch that overruns is tried again one
    request at a time, each with the same deadline, so only the request that overruns alone
    times out: a request spends at most twice its stage's timeout in a stage."""

    extract: float = 60.0
    check: float = 120.0


def _items(job: _Job) -> list[CheckItem]:
    """A job's claims as the checker receives them."""
    return [
        CheckItem(
            claim=claim,
            references=job.request.references,
            question=job.request.question,
            request_id=job.request.request_id,
            claim_index=index,
        )
        for index, claim in enumerate(job.claims)
    ]


def checker_placement(checker: Checker | None, runs_in: Placement) -> Placement:
    """Where `checker`'s work happens: a checker that calls out (a service) says so with its
    own `placement` attribute; any other runs where its pipeline runs."""
    placement = getattr(checker, "placement", None)
    return placement if isinstance(placement, Placement) else runs_in


def _diagnostics(
    setting: Diagnostics | bool | None, relevance: RelevanceSource
) -> Diagnostics | None:
    """The pipeline's diagnostics: the default's (True) when its extra is installed, with the
    relevance judge `relevance` names (which needs the extra too: the head is its fallback)."""
    judge = relevance_judge(relevance)
    if judge is not None and setting is not True:
        raise ConfigurationError(
            "relevance= sets the scorer of the pipeline's own diagnostics: leave diagnostics "
            "at True (or give Diagnostics(judge=...) alone)"
        )
    if setting is True:
        from refcheck_callbacks.check.embedded.checker import NEEDS
        from refcheck_callbacks.errors import MissingExtraError
        from refcheck_callbacks.support.extras import require_installed

        try:
            require_installed(NEEDS, "embedded", "retrieval diagnostics")
        except MissingExtraError as missing:
            if judge is not None:
                raise
            logger.info("no retrieval diagnostics: %s", missing)
            return None
        return Diagnostics(judge=judge)
    return setting or None


def _diagnosed(diagnosis: Diagnosis | None) -> dict[str, object]:
    """A result's diagnostic fields (none when diagnostics did not run)."""
    if diagnosis is None:
        return {}
    return {
        "references_used": diagnosis.references,
        "answer_relevance": diagnosis.answer_relevance,
        "non_answer": diagnosis.non_answer,
        "relevance_scorer": diagnosis.relevance_scorer,
        "relevance_fallbacks": diagnosis.relevance_fallbacks,
    }


class Pipeline:
    """The stages in order. `runs_in` is where this pipeline itself runs (the monitor's thread,
    or a child process), recorded on every result unless the checker runs elsewhere. `checker`
    may be None for a pipeline that only extracts (`refcheck extract`)."""

    def __init__(
        self,
        extractor: Extractor,
        checker: Checker | None,
        aggregator: Aggregator = Aggregator.STRICT,
        redact: Redactor | None = None,
        timeouts: StageTimeouts | None = None,
        runs_in: Placement = Placement.THREAD,
        max_claims: int | None = None,
        conflict: ConflictSource = DEFAULT_CONFLICT,
        calibration: Calibration | None = None,
        diagnostics: Diagnostics | bool | None = True,
        relevance: RelevanceSource = None,
    ) -> None:
        self.extractor = extractor
        self.checker = checker
        self.conflict: ConflictFinder | None = conflict_finder(conflict)
        """The conflict stage's finder (`check.conflict`); None leaves verdicts as given."""
        if calibration is not None and checker is not None:
            calibration.verify(identity_of(checker, self.conflict))
        self.calibration = calibration
        """The app's decision points (`check.calibration`), applied after the conflict stage."""
        self.aggregator = aggregator
        self.redact = redact
        self.timeouts = timeouts or StageTimeouts()
        self.max_claims = max_claims
        """Extracted claims checked per request (issue 19: `InputLimits.max_claims`)."""
        self.placement = checker_placement(checker, runs_in)
        self.diagnostics = _diagnostics(diagnostics, relevance)
        """Retrieval diagnostics (`check.diagnose`); None runs none. `relevance` picks their
        relevance scorer: None or "embedded" (the offline head), "llm:MODEL", or a judge
        (`check.relevance.selection`)."""

    async def extract(self, requests: Sequence[CheckRequest]) -> list[Extraction]:
        """The extract stage alone (`refcheck extract`): one extraction per request, in order,
        with the stage's deadline and one-by-one retry; a failure is the request's error."""
        jobs = [_Job(request) for request in requests]
        await self._extract(jobs)
        for job in jobs:
            if job.open:
                job.claims = prepared_claims(job.request, job.claims, job.markup)
        return [job.extraction() for job in jobs]

    async def run(self, requests: Sequence[CheckRequest]) -> list[CheckResult]:
        """One result per request, in order. Never raises for a request's content."""
        if self.checker is None:
            raise ValueError("this pipeline has no checker: it can only extract")
        started = time.time()
        jobs = [_Job(request) for request in requests]
        for job in jobs:
            job.timings["queue"] = max(0.0, started - job.request.submitted_at)
            job.stage_started["queue"] = job.request.submitted_at
        self._redact(jobs)
        self._screen(jobs, self.checker.needs_references)
        await self._extract([j for j in jobs if j.open and j.request.claims is None])
        for job in jobs:
            if job.open:
                claims = job.claims if job.request.claims is None else job.request.claims
                job.claims = prepared_claims(job.request, claims, job.markup)
            if job.open and not job.claims:
                job.end(Outcome.ABSTAIN, "the answer holds no checkable claim")
        await self._check(self.checker, [j for j in jobs if j.open])
        await self._settle(self.checker, [j for j in jobs if j.open])
        self._calibrate([j for j in jobs if j.open])
        await self._diagnose([j for j in jobs if j.open or j.outcome is Outcome.ABSTAIN])
        return [self._result(job, started, self.checker.name) for job in jobs]

    def _redact(self, jobs: list[_Job]) -> None:
        if self.redact is None:
            return
        for job in jobs:
            job.stage_started["redact"] = time.time()
            t0 = time.perf_counter()
            outcome = redacted(job.request, self.redact)
            if isinstance(outcome, Withheld):
                job.request = outcome.request
                job.end(Outcome.ERROR, outcome.message, outcome.error_type)
            else:
                job.request = outcome
            job.timings["redact"] = time.perf_counter() - t0

    def _screen(self, jobs: list[_Job], needs_references: bool) -> None:
        for job in jobs:
            if not job.open:
                continue
            if not job.request.answer.strip():
                job.end(Outcome.EMPTY_ANSWER, "the answer is empty: there is nothing to check")
            elif needs_references and not job.request.references:
                job.end(
                    Outcome.NO_REFERENCES,
                    "no references: there is nothing to check the answer against",
                )

    async def _extract(self, jobs: list[_Job]) -> None:
        async def call(batch: list[_Job]) -> list[Extraction]:
            return await self.extractor.extract([job.for_extraction() for job in batch])

        for job, extraction in await self._stage("extract", jobs, call, self.timeouts.extract):
            job.add_usage(extraction.usage)
            job.add_notes(extraction.notes)
            if extraction.error:
                kind = extraction.error_type or ExtractionError.__name__
                job.end(Outcome.ERROR, extraction.error, kind)
            else:
                cut: list[str] = []
                job.claims = first_claims(extraction.claims, self.max_claims, cut)
                job.add_notes(cut)

    async def _check(self, checker: Checker, jobs: list[_Job]) -> None:
        async def call(batch: list[_Job]) -> list[list[Verdict]]:
            items = [item for job in batch for item in _items(job)]
            verdicts = await checker.check(items)
            if len(verdicts) != len(items):
                raise StageOutputError(
                    f"checker returned {len(verdicts)} verdicts for {len(items)} claims"
                )
            out, cursor = [], 0
            for job in batch:
                out.append(list(verdicts[cursor : cursor + len(job.claims)]))
                cursor += len(job.claims)
            return out

        for job, verdicts in await self._stage("check", jobs, call, self.timeouts.check):
            # Each verdict names the checker that decided it: this one, unless a fallback did.
            job.verdicts = [
                v
                if v.decided_by or v.label is None
                else v.model_copy(update={"decided_by": checker.name})
                for v in verdicts
            ]
            for verdict in verdicts:
                job.add_usage(verdict.usage)

    async def _settle(self, checker: Checker, jobs: list[_Job]) -> None:
        """The conflict stage: Contradiction only where a conflicting statement was found."""
        finder = self.conflict
        if finder is None:
            return
        screened = getattr(checker, "screens_with", None) == finder.name

        async def call(batch: list[_Job]) -> list[list[Verdict]]:
            items = [item for job in batch for item in _items(job)]
            verdicts = await settle(
                finder, items, [v for job in batch for v in job.verdicts], screened
            )
            out, cursor = [], 0
            for job in batch:
                out.append(verdicts[cursor : cursor + len(job.verdicts)])
                cursor += len(job.verdicts)
            return out

        for job, verdicts in await self._stage("conflict", jobs, call, self.timeouts.check):
            job.verdicts = verdicts

    def _calibrate(self, jobs: list[_Job]) -> None:
        """The verdicts cut at the calibration's decision points (pure arithmetic: no stage)."""
        if self.calibration is None:
            return
        points, own = self.calibration.points, self.calibration.defaults.support_threshold
        for job in jobs:
            job.verdicts = [relabel(verdict, points, own) for verdict in job.verdicts]

    async def _diagnose(self, jobs: list[_Job]) -> None:
        """Diagnostics per request: arithmetic on what checking found, after the relevance
        judge's calls (if any: one per request, concurrently, each within the check timeout;
        a failure falls back to the head and never raises)."""
        diagnostics = self.diagnostics
        if diagnostics is None or not jobs:
            return
        started, t0 = time.time(), time.perf_counter()
        judged: Sequence[JudgedRelevance | None] = [None] * len(jobs)
        if diagnostics.judge is not None:
            timeout = self.timeouts.check
            judged = await asyncio.gather(
                *(diagnostics.judged(job.request, job.claims, timeout) for job in jobs)
            )
        waited = time.perf_counter() - t0
        for job, scores in zip(jobs, judged, strict=True):
            job.stage_started["diagnose"] = started
            t1 = time.perf_counter()
            try:
                job.diagnosis = diagnostics.diagnose(job.request, job.claims, job.verdicts, scores)
                job.verdicts = job.diagnosis.verdicts
                job.add_usage(job.diagnosis.usage)
            except Exception:  # diagnostics must never cost a request its verdicts
                logger.warning("retrieval diagnostics failed on a request", exc_info=True)
                if scores is not None:
                    job.add_usage(scores.usage)  # spent all the same
            job.timings["diagnose"] = waited + time.perf_counter() - t1

    async def _stage(
        self,
        stage: str,
        jobs: list[_Job],
        call: StageCall[_Job, T],
        timeout: float,
    ) -> list[tuple[_Job, T]]:
        """The jobs `call` gave an output, paired with it; the others end with their failure."""
        if not jobs:
            return []
        wall_start = time.time()
        t0 = time.perf_counter()
        paired = []
        for job, output in zip(jobs, await run_stage(stage, jobs, call, timeout), strict=True):
            if isinstance(output, StageFailure):
                job.end(output.outcome, output.message, output.error_type)
            else:
                paired.append((job, output))
        elapsed = time.perf_counter() - t0
        for job in jobs:
            job.timings.setdefault(stage, elapsed)
            job.stage_started.setdefault(stage, wall_start)
        return paired

    def _result(self, job: _Job, started: float, checker: str) -> CheckResult:
        job.stage_started["aggregate"] = time.time()
        t0 = time.perf_counter()
        labels: list[Label] = [v.label for v in job.verdicts if v.label is not None]
        if job.open:
            failed = len(job.verdicts) - len(labels)
            if failed == 0:
                job.outcome = Outcome.CHECKED
            elif labels:
                job.end(Outcome.PARTIAL, f"{failed} of {len(job.verdicts)} claims got no verdict")
            else:
                errors = {v.error for v in job.verdicts}
                message = "; ".join(sorted(e for e in errors if e))
                kinds = {v.error_type for v in job.verdicts}
                kind = kinds.pop() if len(kinds) == 1 else None
                job.end(Outcome.ERROR, message, kind or CheckError.__name__)
        checked = job.outcome in (Outcome.CHECKED, Outcome.PARTIAL)
        abstained = job.outcome is Outcome.ABSTAIN
        job.timings["aggregate"] = time.perf_counter() - t0
        job.timings["total"] = time.time() - started + job.timings["queue"]
        job.stage_started["total"] = job.request.submitted_at
        return CheckResult(
            request=job.request,
            outcome=job.outcome or Outcome.ERROR,
            claims=job.claims,
            verdicts=job.verdicts,
            response_label=aggregate.response_label(labels, self.aggregator)
            if checked or abstained
            else None,
            ratios=aggregate.soft(labels) if checked else None,
            error_type=job.error_type,
            message=job.message,
            timings=job.timings,
            stage_started=job.stage_started,
            extractor=None if job.request.claims is not None else self.extractor.name,
            checker=checker,
            placement=self.placement,
            usage=job.usage,
            **_diagnosed(job.diagnosis),
        )
