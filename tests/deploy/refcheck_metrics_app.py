"""A RAG-app stand-in for the end-to-end tests: a real RefCheckMonitor, scraped by Prometheus.

Run as `python refcheck_metrics_app.py PORT FEEDBACK_FILE`. It sets up OpenTelemetry metrics
with the Prometheus exporter on 127.0.0.1:PORT (0: a free port, which its ready line names),
builds monitors with the default exporter wiring
(the first writes people's feedback to FEEDBACK_FILE), then reads one JSON command per stdin line
and answers each with one JSON line of running totals:

    {"answers": 40, "contradiction_share": 0.05}   submit 40 two-claim answers and wait for them
    {"skip": 3, "burst": 20, "hook_errors": 2}     make skips, drops and hook errors happen
    {"overlong": 2}                                 2 answers whose question is over its limit
    {"cascade": 10}                                 10 answers through a two-stage cascade
    {"feedback": 10}                                a person finds the last 10 answers supported
                                                    (and gives feedback on an unknown answer)
    {"non_answers": 3}                              3 answers that say the documents lack it

Answers come with a question, so retrieval diagnostics score their references' relevance.

The checker is scripted: it labels a claim by a word the app wrote into it, so the test decides
exactly how many contradictions the monitor sees. The first monitor is calibrated (`CALIBRATION`:
flag counts on audit labels), so the adjusted rates and their gauges have data.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from collections.abc import Sequence

from opentelemetry import metrics
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from prometheus_client import start_http_server

from refcheck_callbacks import (
    CharSpan,
    CheckItem,
    CheckResult,
    Evidence,
    Label,
    ModelSpend,
    RefCheckMonitor,
    Usage,
    Verdict,
)
from refcheck_callbacks.check.calibration.file import (
    Calibration,
    CheckerIdentity,
    DataSize,
    identity_of,
)
from refcheck_callbacks.check.calibration.points import defaults_of
from refcheck_callbacks.check.calibration.rates import RateFit, RateName
from refcheck_callbacks.check.cascade import CascadeChecker, CascadeStage
from refcheck_callbacks.check.conflict.stated_facts import StatedFactFinder
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.check.relevance.llm_relevance import LLMRelevance
from refcheck_callbacks.contract.reasons import ForwardReason, IgnoreReason, RejectReason, Tally
from refcheck_callbacks.integrations.otlp.collector import TraceCollector

MODELS = ("model-a", "model-b")
QUESTION = "Which facts does the record list?"
LABEL_WORDS = {
    "contradicted": Label.CONTRADICTION,
    "unverified": Label.NEUTRAL,
    "supported": Label.ENTAILMENT,
}


class ScriptedChecker:
    """A real `Checker` whose verdict is named by the claim itself; `broken` claims fail.

    Each verdict cites the first reference as evidence and reports LLM-judge-like usage.
    """

    name = "scripted"
    needs_references = True

    async def check(self, items: Sequence[CheckItem]) -> list[Verdict]:
        return [self._verdict(item) for item in items]

    def _verdict(self, item: CheckItem) -> Verdict:
        broken = "broken" in item.claim.text
        # Spend by model and role, as an LLM judge under a JudgeBudget reports it; a broken
        # claim also stands for a call the budget refused.
        spend = ModelSpend(
            model="scripted-judge",
            role="checker",
            prompt_tokens=40,
            completion_tokens=4,
            cost_usd=0.0001,
            refused=int(broken),
            budget_used=0.5,
        )
        usage = Usage(
            prompt_tokens=40, completion_tokens=4, requests=1, cost_usd=0.0001, by_model=(spend,)
        )
        if broken:
            return Verdict(label=None, error="scripted failure", usage=usage)
        label = next(label for word, label in LABEL_WORDS.items() if word in item.claim.text)
        first = item.references[0]
        evidence = Evidence(
            reference_index=0, reference_id=first.id, span=CharSpan(start=0, end=len(first.text))
        )
        return Verdict(label=label, confidence=0.9, evidence=[evidence], usage=usage)


class QuickChecker(ScriptedChecker):
    """A free first cascade stage: sure of supported claims only, spends nothing."""

    name = "quick"

    def _verdict(self, item: CheckItem) -> Verdict:
        verdict = super()._verdict(item)
        sure = verdict.label is Label.ENTAILMENT
        return verdict.model_copy(update={"usage": None, "confidence": 0.99 if sure else 0.6})


class Totals:
    """What the app saw, for the test to compare with what Prometheus scraped."""

    def __init__(self) -> None:
        self.claims: Counter[str] = Counter()
        self.responses: Counter[str] = Counter()
        self.usage = Usage()
        self.escalations: Counter[str] = Counter()
        self.verdicts: dict[str, list[Label | None]] = {}
        """The checker's labels by response id: what feedback is compared with."""
        self.agreed: Counter[str] = Counter()
        """Labelled claims by whether the checker agreed (`true` / `false`)."""
        self.scored_references = 0
        self.causes: Counter[str] = Counter()
        self.non_answers = 0

    def __call__(self, result: CheckResult) -> None:
        if result.request.response_id is not None:
            self.verdicts[result.request.response_id] = [v.label for v in result.verdicts]
        for verdict in result.verdicts:
            self.claims["error" if verdict.label is None else verdict.label.value] += 1
            self.escalations.update(step.stage for step in verdict.stages[:-1])
        self.responses[result.outcome.value] += 1
        self.usage += result.usage or Usage()
        self.scored_references += sum(u.relevance is not None for u in result.references_used)
        self.causes.update(v.cause.value for v in result.verdicts if v.cause is not None)
        self.non_answers += result.non_answer


class HookThatFails:
    """An `on_result` hook that raises for answers marked to make it fail (counted as errors)."""

    def __call__(self, result: CheckResult) -> None:
        if result.request.metadata.get("fail_hook"):
            raise RuntimeError("a user hook failed")


def _answer(index: int, contradiction_share: float, rng: random.Random) -> str:
    words = []
    for claim in range(2):
        draw = rng.random()
        if draw < contradiction_share:
            words.append("contradicted")
        elif draw < contradiction_share + 0.1:
            words.append("unverified")
        elif index % 50 == 0 and claim == 1:
            words.append("broken")
        else:
            words.append("supported")
    return " ".join(
        f"Fact number {index}-{n} is {word} by the record." for n, word in enumerate(words)
    )


def calibration_for(identity: CheckerIdentity) -> Calibration:
    """A calibration at the checker's own decision points, with flag counts on audit labels."""
    defaults = defaults_of(EmbeddedChecker())
    return Calibration(
        refcheck_version="e2e",
        created_at="2026-01-01T00:00:00+00:00",
        checker=identity,
        points=defaults,
        defaults=defaults,
        max_false_contradiction=0.01,
        data=DataSize(records=200, responses=200, claims=200, supported=140, unsupported=60),
        rates={
            RateName.HALLUCINATION: RateFit(
                positives=60, negatives=140, flagged_positives=51, flagged_negatives=35
            ),
            RateName.CONTRADICTION: RateFit(
                positives=20, negatives=180, flagged_positives=15, flagged_negatives=4
            ),
        },
    )


def main(port: int, feedback_file: str) -> None:
    reader = PrometheusMetricReader()
    resource = Resource.create({"service.name": "refcheck-e2e"})
    metrics.set_meter_provider(MeterProvider([reader], resource=resource))
    server, _ = start_http_server(port, addr="127.0.0.1")

    totals = Totals()
    checker = ScriptedChecker()
    calibration = calibration_for(identity_of(checker, StatedFactFinder()))
    monitor = RefCheckMonitor(
        checker=checker,
        on_result=[totals, HookThatFails()],
        max_wait=0.01,
        feedback_file=feedback_file,
        calibration=calibration,
        audit_rate=0.5,  # the audit's draws reach the metrics too
        audit_file=f"{feedback_file}.audit",
    )
    sampled_out = RefCheckMonitor(checker=checker, sample_rate=0.0)
    tiny = RefCheckMonitor(checker=checker, on_result=[totals], max_queue=1, max_wait=0.2)
    cascade = RefCheckMonitor(
        checker=CascadeChecker([CascadeStage(QuickChecker(), threshold=0.9), checker]),
        on_result=[totals],
    )
    # An LLM relevance judge nobody answers (port 9, closed): its fallbacks reach the metrics.
    unanswered = RefCheckMonitor(
        checker=checker,
        on_result=[totals],
        relevance=LLMRelevance("openai/relevance", "http://127.0.0.1:9/v1", "unused"),
    )
    unanswered.submit(
        answer="Fact number 1 is supported by the record.",
        references=["The record lists every fact."],
        question=QUESTION,
        trace_context=None,
    )
    unanswered.flush(30)
    rng = random.Random(7)
    submitted = 0
    print(json.dumps({"ready": True, "port": server.server_port}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        for _ in range(command.get("answers", 0)):
            monitor.submit(
                answer=_answer(submitted, command.get("contradiction_share", 0.0), rng),
                references=["The record lists every fact."],
                question=QUESTION,
                model=MODELS[submitted % len(MODELS)],
                response_id=f"answer-{submitted}",
                trace_context=None,
            )
            submitted += 1
        for index in range(command.get("hook_errors", 0)):
            monitor.submit(
                answer=f"Fact number {index} is supported by the record.",
                references=["The record."],
                metadata={"fail_hook": True},
                trace_context=None,
            )
        for index in range(command.get("overlong", 0)):
            monitor.submit(
                answer=f"Fact number {index} is supported by the record.",
                references=["The record."],
                question="Is it recorded? " * 2_000,  # past max_question_chars
                trace_context=None,
            )
        for _ in range(command.get("non_answers", 0)):
            monitor.submit(
                # A refusal whose one claim the scripted checker can label (neutral).
                answer="I could not find that in the documents: it is unverified by the record.",
                references=["The record lists every fact."],
                question=QUESTION,
                trace_context=None,
            )
        for _ in range(command.get("skip", 0)):
            sampled_out.submit(answer="Skipped.", references=["x"], trace_context=None)
        for index in range(command.get("burst", 0)):
            tiny.submit(
                answer=f"Fact number {index} is supported by the record.",
                references=["The record."],
                trace_context=None,
            )
        for index in range(command.get("cascade", 0)):
            cascade.submit(
                answer=_answer(index, 0.3, rng), references=["The record."], trace_context=None
            )
        for m in (monitor, tiny, cascade):
            m.flush(30)
        if command.get("feedback"):
            for number in range(submitted - command["feedback"], submitted):
                if monitor.feedback(f"answer-{number}", True):
                    labels = totals.verdicts[f"answer-{number}"]
                    totals.agreed.update(
                        str(label is Label.ENTAILMENT).lower() for label in labels if label
                    )
            assert not monitor.feedback("never-checked", True)
            # what `refcheck collect` refuses reaches the same metrics (monitor.record)
            collector = TraceCollector(monitor, record=monitor.record)
            collector.reject(RejectReason.MALFORMED, "not a trace export")
            collector.lose_forward(ForwardReason.FAILED, "the downstream did not answer")
            collector.ignore(IgnoreReason.METRICS)
        stats = {
            t.value: monitor.stats.get(t) + sampled_out.stats.get(t) + tiny.stats.get(t)
            for t in Tally
        }
        print(
            json.dumps(
                {
                    "claims": totals.claims,
                    "responses": totals.responses,
                    "stats": stats,
                    "usage": totals.usage.model_dump(),
                    "escalations": totals.escalations,
                    "agreed": totals.agreed,
                    "scored_references": totals.scored_references,
                    "causes": totals.causes,
                    "non_answers": totals.non_answers,
                }
            ),
            flush=True,
        )
    for m in (monitor, sampled_out, tiny, cascade):
        m.shutdown()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
