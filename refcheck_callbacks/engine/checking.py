"""The monitor's checking: submitted answers in, results delivered, or each one counted.

The worker hands every batch to `Checking` through its named interface (`worker.Batches`):

- `check`: each answer is paired where its integration left that to the worker (`intake.paired`,
  which calls the integration's `Pairing`), built into a request (`intake.build_request`) and
  run where the monitor's placement runs its pipeline (`Runner`: the worker's thread, a child
  process); an answer with nothing to check against is counted skipped `no_references` (or the
  reason its pairing gives), input that cannot become a request is an `invalid_input` result,
  and each field cut to its limit is counted `truncated`;
- `deliver`: the results go to the exporters and hooks (`Delivery`);
- `lost`: answers given up (a shutdown's deadline, a crash) are counted dropped.

A direct check (`RefCheckMonitor.check`) takes the same path for one request (`check_one`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from refcheck_callbacks.contract.answers import InputLimits
from refcheck_callbacks.contract.reasons import DropReason, SkipReason, Tally
from refcheck_callbacks.engine.delivery import Delivery
from refcheck_callbacks.engine.intake import Cuts, build_request, paired
from refcheck_callbacks.engine.placement.in_thread import Runner
from refcheck_callbacks.engine.submission import RawInput
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import CheckRequest, CheckResult, Outcome


def invalid_input(exc: BaseException) -> CheckResult:
    """The result of input that cannot become a request at all."""
    return CheckResult(
        request=CheckRequest(answer="", notes=("the input could not be read",)),
        outcome=Outcome.INVALID_INPUT,
        error_type=type(exc).__name__,
        message=f"the input could not be read: {exc}",
    )


def unpaired(reason: SkipReason = SkipReason.NO_REFERENCES) -> CheckResult:
    """The result of a direct check whose pairing found nothing its model saw, or skipped
    the answer for `reason`."""
    if reason is SkipReason.NO_ANSWER:
        return CheckResult(
            request=CheckRequest(answer=""),
            outcome=Outcome.EMPTY_ANSWER,
            message="no answer: the run returned a decision or a tool call, not an answer",
        )
    return CheckResult(
        request=CheckRequest(answer=""),
        outcome=Outcome.NO_REFERENCES,
        message="no references: the answering model saw none of the documents captured",
    )


def _skip_reason(built: object) -> SkipReason | None:
    """Why a pairing left this answer unchecked (nothing seen: `no_references`); None when
    it goes on to be checked."""
    if built is None:
        return SkipReason.NO_REFERENCES
    return built if isinstance(built, SkipReason) else None


class Checking:
    """Batches of captured answers to delivered results (see the module)."""

    def __init__(self, runner: Runner, delivery: Delivery, limits: InputLimits) -> None:
        self.runner = runner
        self.delivery = delivery
        self.limits = limits

    async def check(self, raws: list[RawInput]) -> list[CheckResult]:
        """One result per answer that pairs, in order; unpaired and skipped ones are counted."""
        built = [self.request(raw) for raw in raws]
        skipped = Counter(reason for b in built if (reason := _skip_reason(b)) is not None)
        for reason, count in sorted(skipped.items()):
            self.delivery.record(Tally.SKIPPED, reason, count)
        requests = [b for b in built if isinstance(b, CheckRequest)]
        results = iter(await self.run(requests))
        return [
            b if isinstance(b, CheckResult) else next(results)
            for b in built
            if isinstance(b, CheckRequest | CheckResult)
        ]

    def deliver(self, results: Sequence[CheckResult]) -> None:
        self.delivery.deliver(results)

    def lost(self, count: int, reason: DropReason) -> None:
        self.delivery.record(Tally.DROPPED, reason, count)

    def request(self, raw: RawInput) -> CheckRequest | CheckResult | SkipReason | None:
        """The request to check, or an `invalid_input` result when none can be built; None
        when an integration's `Pairing` found nothing its model saw, the reason when it skipped
        the answer (see `intake.paired`)."""
        try:
            decided = paired(raw)
            if decided is None or isinstance(decided, SkipReason):
                return decided
            cuts = Cuts()
            request = build_request(decided, self.limits, cuts)
            for reason in sorted(cuts.fields):
                self.delivery.record(Tally.TRUNCATED, reason)
            return request
        except BaseException as exc:
            # Even SystemExit from a `references` callable or a pairing: it fails this request
            # alone.
            return invalid_input(exc)

    async def run(self, requests: list[CheckRequest]) -> list[CheckResult]:
        """The pipeline's results; should the pipeline itself fail, an error result for each."""
        try:
            return await self.runner.run(requests)
        except Exception as exc:
            logger.exception("refcheck: the pipeline failed on a batch")
            return [
                CheckResult(
                    request=request,
                    outcome=Outcome.ERROR,
                    error_type=type(exc).__name__,
                    message=f"internal error: {exc}",
                )
                for request in requests
            ]

    async def check_one(self, request: CheckRequest) -> CheckResult:
        """One request checked and delivered now (a direct check)."""
        [result] = await self.run([request])
        self.delivery.deliver([result])
        return result
