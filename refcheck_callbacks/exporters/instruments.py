"""refcheck's OpenTelemetry instruments, created once per meter provider and shared.

Shared because the SDK warns on a second instrument of the same name and keeps only the first
callback of an observable one: two monitors on one provider must record into the same counters
and report their queues through one `refcheck.queue.size` callback, which sums them.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from typing import Protocol

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation

from refcheck_callbacks.contract.reasons import Tally
from refcheck_callbacks.exporters import names
from refcheck_callbacks.exporters.calibration_gauges import CalibrationGauges

RATIO_BUCKETS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""`le="0"` counts fully supported answers; the rest are tenths."""
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
"""Seconds, from a cached embedding check to a slow LLM judge behind a busy queue."""
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)


class QueueSource(Protocol):
    def queue_size(self) -> int | None:
        """Answers waiting in one monitor's queue; None when it is not bound to one."""
        ...


class DiagnosticInstruments:
    """Retrieval diagnostics' instruments (`exporters.diagnostics` records them)."""

    def __init__(self, meter: Meter) -> None:
        self.reference_relevance = meter.create_histogram(
            names.REFERENCE_RELEVANCE,
            names.UNIT_RATIO,
            "Relevance of each retrieved reference to the question (le=0.5: not relevant).",
            explicit_bucket_boundaries_advisory=RATIO_BUCKETS,
        )
        self.answer_relevance = meter.create_histogram(
            names.ANSWER_RELEVANCE,
            names.UNIT_RATIO,
            "Whether an answer addresses its question.",
            explicit_bucket_boundaries_advisory=RATIO_BUCKETS,
        )
        self.references_used_ratio = meter.create_histogram(
            names.REFERENCES_USED_RATIO,
            names.UNIT_RATIO,
            "Share of an answer's references that supported at least one of its claims.",
            explicit_bucket_boundaries_advisory=RATIO_BUCKETS,
        )
        self.claim_causes = meter.create_counter(
            names.CLAIM_CAUSES,
            names.UNIT_CLAIM,
            "Claims not supported, by cause (retrieval_missed, unsupported_by_relevant_context, "
            "contradicted).",
        )
        self.non_answers = meter.create_counter(
            names.NON_ANSWERS,
            names.UNIT_RESPONSE,
            "Refusals and non-answers, counted apart from hallucination.",
        )
        self.relevance_fallbacks = meter.create_counter(
            names.RELEVANCE_FALLBACKS,
            names.UNIT_SCORE,
            "Relevance scores the LLM relevance judge could not give (the offline head gave "
            "them), by subject and reason.",
        )


class Instruments:
    """Every refcheck instrument on one meter."""

    def __init__(self, meter: Meter) -> None:
        self.claims = meter.create_counter(
            names.CLAIMS,
            names.UNIT_CLAIM,
            "Claims checked, by verdict (error: no verdict) and calibration id.",
        )
        self.responses = meter.create_counter(
            names.RESPONSES, names.UNIT_RESPONSE, "Answers evaluated, by outcome and label."
        )
        self.hallucination_ratio = meter.create_histogram(
            names.HALLUCINATION_RATIO,
            names.UNIT_RATIO,
            "Share of an answer's claims that are neutral or contradicted.",
            explicit_bucket_boundaries_advisory=RATIO_BUCKETS,
        )
        self.contradiction_ratio = meter.create_histogram(
            names.CONTRADICTION_RATIO,
            names.UNIT_RATIO,
            "Share of an answer's claims that the references contradict.",
            explicit_bucket_boundaries_advisory=RATIO_BUCKETS,
        )
        self.stage_duration = meter.create_histogram(
            names.STAGE_DURATION,
            names.UNIT_SECONDS,
            "Seconds per pipeline stage and answer (queue, redact, extract, check, aggregate, "
            "total).",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.batch_size = meter.create_histogram(
            names.CHECKER_BATCH_SIZE,
            names.UNIT_CLAIM,
            "Claims handed to the checker in one batch.",
            explicit_bucket_boundaries_advisory=BATCH_BUCKETS,
        )
        self.tallies = {
            Tally.DROPPED: meter.create_counter(
                names.DROPPED, names.UNIT_REQUEST, "Answers lost for lack of capacity."
            ),
            Tally.SKIPPED: meter.create_counter(
                names.SKIPPED, names.UNIT_REQUEST, "Answers deliberately not checked."
            ),
            Tally.ERRORS: meter.create_counter(
                names.ERRORS, names.UNIT_ERROR, "Failures of refcheck's own code and hooks."
            ),
            Tally.FEEDBACK_REFUSED: meter.create_counter(
                names.FEEDBACK_REFUSED,
                names.UNIT_FEEDBACK,
                "People's verdicts monitor.feedback could not record, by reason.",
            ),
            Tally.TRUNCATED: meter.create_counter(
                names.TRUNCATED,
                names.UNIT_REQUEST,
                "Answers checked with a field cut to its limit (InputLimits), by field.",
            ),
            Tally.REJECTED: meter.create_counter(
                names.COLLECT_REJECTED,
                names.UNIT_REQUEST,
                "What refcheck collect refused: export requests (spans for bad_span_id).",
            ),
            Tally.NOT_FORWARDED: meter.create_counter(
                names.COLLECT_NOT_FORWARDED,
                names.UNIT_REQUEST,
                "Export requests refcheck collect --forward did not pass on, by reason.",
            ),
            Tally.IGNORED: meter.create_counter(
                names.COLLECT_IGNORED,
                names.UNIT_REQUEST,
                "Export requests of signals refcheck collect does not read (metrics, logs).",
            ),
            Tally.AUDITED: meter.create_counter(
                names.AUDIT_DRAWS,
                names.UNIT_RESPONSE,
                "Answers the random audit drew, by what became of each: written, or why not.",
            ),
        }
        self.llm_tokens = meter.create_counter(
            names.LLM_TOKENS, names.UNIT_TOKEN, "Tokens spent by LLM extractors and judges."
        )
        self.llm_cost = meter.create_counter(
            names.LLM_COST, names.UNIT_USD, "Money spent by LLM extractors and judges."
        )
        self.llm_budget_fallbacks = meter.create_counter(
            names.LLM_BUDGET_FALLBACKS,
            names.UNIT_CALL,
            "LLM calls the judge budget refused; their claims went to the fallback checker.",
        )
        self.llm_budget_utilization = meter.create_gauge(
            names.LLM_BUDGET_UTILIZATION,
            names.UNIT_RATIO,
            "Share of the judge budget spent or held in its rolling window.",
        )
        self.escalations = meter.create_counter(
            names.CASCADE_ESCALATIONS,
            names.UNIT_CLAIM,
            "Claims a cascade stage passed on to the next one, by the stage that passed them.",
        )
        self.feedback_claims = meter.create_counter(
            names.FEEDBACK_CLAIMS,
            names.UNIT_CLAIM,
            "Claims a person labelled (monitor.feedback), by whether the checker agreed.",
        )
        self.calibration = CalibrationGauges(meter)
        """The loaded calibrations' flag counts (`calibration_gauges`)."""
        self.diagnostics = DiagnosticInstruments(meter)
        self._lock = threading.Lock()
        self._queues: list[weakref.ref[QueueSource]] = []
        meter.create_observable_gauge(
            names.QUEUE_SIZE,
            callbacks=[self._observe_queues],
            unit=names.UNIT_REQUEST,
            description="Answers waiting in the monitor's queue to be checked.",
        )

    def watch_queue(self, source: QueueSource) -> None:
        """Add a monitor's queue to the gauge. Held weakly: a monitor dropped without
        `shutdown` stops being observed instead of being kept alive by the gauge."""
        with self._lock:
            self._queues.append(weakref.ref(source))

    def unwatch_queue(self, source: QueueSource) -> None:
        with self._lock:
            self._queues = [ref for ref in self._queues if ref() not in (None, source)]

    def _observe_queues(self, options: CallbackOptions) -> Iterable[Observation]:
        with self._lock:
            sources = [source for ref in self._queues if (source := ref()) is not None]
        sizes = [size for source in sources if (size := source.queue_size()) is not None]
        return [Observation(sum(sizes))] if sizes else []


class _Registry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._global: Instruments | None = None
        self._by_provider: weakref.WeakKeyDictionary[MeterProvider, Instruments] = (
            weakref.WeakKeyDictionary()
        )

    def get(self, provider: MeterProvider | None) -> Instruments:
        with self._lock:
            if provider is None:
                if self._global is None:
                    self._global = Instruments(self._meter(None))
                return self._global
            if provider not in self._by_provider:
                self._by_provider[provider] = Instruments(self._meter(provider))
            return self._by_provider[provider]

    @staticmethod
    def _meter(provider: MeterProvider | None) -> Meter:
        return metrics.get_meter(names.INSTRUMENTATION_SCOPE, meter_provider=provider)


_REGISTRY = _Registry()


def instruments_for(provider: MeterProvider | None) -> Instruments:
    """The shared instruments of `provider` (None: the global provider, resolved lazily)."""
    return _REGISTRY.get(provider)
