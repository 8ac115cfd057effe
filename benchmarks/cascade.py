"""Cascade: the embedded checker first, an LLM judge second, on every labelled set in the data.

THE JUDGE IS SIMULATED. No strong model runs on this machine, so the judge is a loopback
OpenAI-compatible server (the one the tests use, `tests/helpers/scripted_openai_server.py`)
that knows each claim's gold label and answers it with a set accuracy: 100% and 85%, the errors
drawn per claim from a seeded hash (so the same claim gets the same answer in every run), each
reply after a set latency, its usage counted from the prompt's length (4 characters a token)
and priced at a set price per token. Everything between the checker and that server is real:
`LLMChecker` (one prompt per claim) through litellm over HTTP, `CascadeChecker`, the pipeline.

What is measured, per set and pooled over all claims:
1. The embedded checker and each judge alone on every claim (real runs).
2. Balanced accuracy (supported vs not) against the share of claims escalated, for both ways a
   stage can measure sureness (the label's confidence, or P(entailment)'s margin from the
   checker's decision point), replayed exactly from those verdicts (`bench.cascade_fit`).
3. Three operating points, thresholds fitted on all sets pooled: the best cascade with at most
   40% of claims escalated (the issue's target: at least 95% of judge-only balanced accuracy,
   with the 85% judge), the fewest escalations that reach 95% of judge-only balanced accuracy,
   and the fewest that match it, with the judge cost and latency each saves.
4. Real cascade runs at those points, 85% judge: judge calls counted by the server must equal
   the replay's escalations, and balanced accuracy must equal the replay's.

Caveat: the shipped embedded checker was trained on these same sets (docs/embedded_checker.md),
so its confidences here are in-sample; its cross-validated, fold-honest scores are lower.

    flock /tmp/cpu.lock python benchmarks/cascade.py [--limit N] [--latency 1.0]
        [--concurrency 128] [--price-in 2.5] [--price-out 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from scripted_openai_server import Received, Reply, ScriptedOpenAIServer

from refcheck_callbacks.bench.cascade_fit import StageRule, fit, replay
from refcheck_callbacks.bench.datasets import DATASET_NAMES, LabelledExample, load_dataset
from refcheck_callbacks.bench.runner import check_examples, gold_supported, subsample
from refcheck_callbacks.check.cascade import CascadeChecker, CascadeStage, Certainty
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.check.judge.checker import LLMChecker
from refcheck_callbacks.llm.client import LLMClient, RetryPolicy
from refcheck_callbacks.support.progress import Progress
from refcheck_callbacks.types import Label, Verdict

SIMULATED = "simulated judge (loopback server answering gold labels at a set accuracy)"
SHARES = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
RULES: tuple[Certainty, ...] = ("confidence", "margin")
_CLAIM = re.compile(r"Claim 1: (.*)")
_DOCUMENT = re.compile(r"\[Document 1\]\n", re.MULTILINE)


def _unit(*parts: object) -> float:
    digest = hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()
    return int(digest[:12], 16) / 16**12


@dataclass
class SimulatedJudge:
    """Answers each claim's gold label, wrong with probability 1 - accuracy (seeded per claim)."""

    examples: list[LabelledExample]
    seed: int
    latency: float
    accuracy: float = 1.0
    ambiguous: int = 0
    unknown: int = 0
    _by_claim: dict[str, list[LabelledExample]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        by_claim: dict[str, list[LabelledExample]] = defaultdict(list)
        for example in self.examples:
            by_claim[" ".join(example.claim.split())].append(example)
        self._by_claim = dict(by_claim)

    def answer(self, example: LabelledExample) -> Label:
        supported = bool(gold_supported(example))
        right = _unit(self.seed, example.dataset, example.example_id) < self.accuracy
        if right:
            return example.label or (Label.ENTAILMENT if supported else Label.NEUTRAL)
        if not supported:
            return Label.ENTAILMENT
        flip = _unit("wrong", self.seed, example.dataset, example.example_id) < 0.5
        return Label.NEUTRAL if flip else Label.CONTRADICTION

    def find(self, request: Received) -> LabelledExample | None:
        """The example a judge prompt is about: its claim, and its first document's opening."""
        prompt = request.prompt
        claim = _CLAIM.findall(prompt)
        start = _DOCUMENT.search(prompt)
        if not claim or start is None:
            return None
        shown = prompt[start.end() :]
        found = [
            e
            for e in self._by_claim.get(claim[-1].strip(), [])
            if e.references and shown.startswith(e.references[0][:2000])
        ]
        if len({gold_supported(e) for e in found}) > 1:
            self.ambiguous += 1
        return found[0] if found else None

    def reply(self, request: Received) -> Reply:
        example = self.find(request)
        if example is None:
            self.unknown += 1
            return Reply(status=500, content="simulated judge: unknown claim")
        content = f"Claim 1:\nReasoning: Simulated.\nLabel: {self.answer(example).value}"
        return Reply(
            content=content,
            delay=self.latency,
            prompt_tokens=len(request.prompt) // 4,
            completion_tokens=len(content) // 4,
        )


@dataclass
class Prices:
    input_per_million: float
    output_per_million: float

    def cost(self, verdict: Verdict | None) -> float:
        usage = verdict.usage if verdict is not None else None
        if usage is None:
            return 0.0
        return (
            usage.prompt_tokens * self.input_per_million
            + usage.completion_tokens * self.output_per_million
        ) / 1e6


def load_sets(limit: int | None, seed: int) -> dict[str, list[LabelledExample]]:
    sets = {}
    for name in DATASET_NAMES:
        examples = [e for e in load_dataset(name) if gold_supported(e) is not None]
        sets[name] = subsample(examples, limit, seed) if limit else examples
    return sets


async def label_all(
    checker: Any, sets: dict[str, list[LabelledExample]], what: str
) -> tuple[dict[str, list[Verdict | None]], dict[str, float]]:
    """Every example's verdict, and the seconds each set took."""
    out, seconds = {}, {}
    for name, examples in sets.items():
        progress = Progress(len(examples), f"{name} / {what}", enabled=sys.stderr.isatty())
        started = time.perf_counter()
        out[name] = await check_examples(checker, examples, 64, progress)
        seconds[name] = time.perf_counter() - started
        progress.close()
    return out, seconds


def judge_checker(server: ScriptedOpenAIServer, concurrency: int, latency: float) -> LLMChecker:
    client = LLMClient(
        "hosted_vllm/simulated-judge",
        server.api_base,
        "unused",
        concurrency=concurrency,
        request_timeout=latency + 30,
        deadline=latency + 40,
        retry=RetryPolicy(max_retries=1, backoff=0.1),
    )
    return LLMChecker(client, joint=False)


def pooled(per_set: dict[str, list[Any]]) -> list[Any]:
    return [item for rows in per_set.values() for item in rows]


def threshold_for_share(verdicts: list[Verdict | None], rule: StageRule, share: float) -> float:
    """The threshold below which about `share` of the claims are."""
    sure = sorted(rule.certainty(v) for v in verdicts if v is not None and v.label is not None)
    if share >= 1.0:
        return 1.0 + 1e-9
    return sure[min(len(sure) - 1, int(share * len(sure)))] if share > 0 else 0.0


def point_row(name: str, point: Any, judge_only: float) -> dict[str, Any]:
    return {
        "set": name,
        "escalated": point.escalated,
        "balanced_accuracy": point.balanced_accuracy,
        "of_judge_only": point.balanced_accuracy / judge_only if judge_only else None,
        "judge_only": judge_only,
        "failed": point.failed,
    }


def analyse(
    sets: dict[str, list[LabelledExample]],
    embedded: dict[str, list[Verdict | None]],
    judged: dict[str, list[Verdict | None]],
    support_point: float,
    prices: Prices,
) -> dict[str, Any]:
    """Curves and operating points for one judge, both sureness rules."""
    gold = {name: [bool(gold_supported(e)) for e in rows] for name, rows in sets.items()}
    all_gold, all_embedded, all_judged = pooled(gold), pooled(embedded), pooled(judged)
    judge_rule = StageRule()
    judge_only = {
        name: replay(gold[name], [judged[name]], [judge_rule], []).balanced_accuracy
        for name in sets
    }
    judge_only["pooled"] = replay(all_gold, [all_judged], [judge_rule], []).balanced_accuracy
    judge_cost = sum(prices.cost(v) for v in all_judged)
    result: dict[str, Any] = {"judge_only": judge_only, "judge_only_cost_usd": judge_cost}
    for by in RULES:
        rule = StageRule(by=by, support_threshold=support_point)
        rules = [rule, judge_rule]
        curve = []
        for share in SHARES:
            t = threshold_for_share(all_embedded, rule, share)
            row = {"share_target": share, "threshold": t}
            row["pooled"] = replay(all_gold, [all_embedded, all_judged], rules, [t]).model_dump()
            row["sets"] = {
                name: replay(gold[name], [embedded[name], judged[name]], rules, [t]).model_dump()
                for name in sets
            }
            curve.append(row)
        targets = {
            "at_most_40": {"target_escalation": 0.40},
            "reaching_95_of_judge_only": {"target_balanced_accuracy": 0.95 * judge_only["pooled"]},
            "equal_to_judge_only": {"target_balanced_accuracy": judge_only["pooled"]},
        }
        points = {}
        for label, target in targets.items():
            fitted = fit(["embedded", "judge"], all_gold, [all_embedded, all_judged], rules,
                         **target)  # fmt: skip
            chosen = fitted.chosen
            if chosen is None:
                points[label] = None
                continue
            t = chosen.thresholds[0]
            escalated = [
                v is None or v.label is None or rule.certainty(v) < t for v in all_embedded
            ]
            cost = sum(prices.cost(j) for j, e in zip(all_judged, escalated, strict=True) if e)
            points[label] = {
                "threshold": t,
                "pooled": point_row("pooled", chosen, judge_only["pooled"]),
                "sets": [
                    point_row(
                        name,
                        replay(gold[name], [embedded[name], judged[name]], rules, [t]),
                        judge_only[name],
                    )
                    for name in sets
                ],
                "judge_cost_usd": cost,
                "judge_cost_saved": 1 - cost / judge_cost if judge_cost else None,
            }
        result[by] = {"curve": curve, "points": points}
    return result


async def verify(
    sets: dict[str, list[LabelledExample]],
    server: ScriptedOpenAIServer,
    simulated: SimulatedJudge,
    judge: LLMChecker,
    embedded_checker: EmbeddedChecker,
    by: Certainty,
    threshold: float,
) -> dict[str, Any]:
    """A real cascade at `threshold`: judge calls and balanced accuracy, per set and pooled."""
    server.reset()
    server.respond(simulated.reply)
    cascade = CascadeChecker([CascadeStage(embedded_checker, threshold, by=by), judge])
    verdicts, seconds = await label_all(cascade, sets, f"cascade {by} < {threshold:.4f}")
    gold = {name: [bool(gold_supported(e)) for e in rows] for name, rows in sets.items()}
    rows = {}
    for name in sets:
        point = replay(gold[name], [verdicts[name]], [StageRule()], [])
        escalated = sum(len(v.stages) > 1 for v in verdicts[name] if v is not None)
        rows[name] = {"balanced_accuracy": point.balanced_accuracy, "escalated": escalated}
    all_verdicts = pooled(verdicts)
    return {
        "threshold": threshold,
        "by": by,
        "seconds": sum(seconds.values()),
        "judge_calls": len(server.chat_requests()),
        "escalated": sum(len(v.stages) > 1 for v in all_verdicts if v is not None),
        "claims": len(all_verdicts),
        "balanced_accuracy": replay(
            pooled(gold), [all_verdicts], [StageRule()], []
        ).balanced_accuracy,
        "sets": rows,
    }


async def call_latency(
    server: ScriptedOpenAIServer, simulated: SimulatedJudge, judge: LLMChecker, sets: Any
) -> float:
    """Mean seconds of one judge call seen from the checker, over 20 sequential calls."""
    examples = pooled(sets)[:20]
    server.reset()
    server.respond(simulated.reply)
    started = time.perf_counter()
    for example in examples:
        await label_all(judge, {"latency": [example]}, "latency")
    return (time.perf_counter() - started) / len(examples)


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def _sets_table(report: dict[str, Any]) -> list[str]:
    judges = report["judges"]
    rows = [
        [name, str(row["claims"]), f"{row['supported'] / row['claims']:.0%}",
         f"{row['embedded_ba']:.3f}", f"{row['embedded_s']:.1f}",
         f"{judges['100']['judge_only'][name]:.3f}", f"{judges['85']['judge_only'][name]:.3f}"]
        for name, row in report["sets"].items()
    ]  # fmt: skip
    header = ["set", "claims", "supported", "embedded BA", "embedded s", "judge 100% BA",
              "judge 85% BA"]  # fmt: skip
    return _table(header, rows)


def _curve_table(report: dict[str, Any], curve: list[dict[str, Any]]) -> list[str]:
    names = list(report["sets"])
    rows = []
    for row in curve:
        cells = [
            f"{row['sets'][n]['balanced_accuracy']:.3f} ({row['sets'][n]['reached'][1]:.0%})"
            for n in names
        ]
        pooled_point = row["pooled"]
        rows.append(
            [
                f"{pooled_point['reached'][1]:.0%}",
                *cells,
                f"{pooled_point['balanced_accuracy']:.3f}",
            ]
        )
    return _table(["escalated (pooled)", *names, "pooled BA"], rows)


def _point_lines(label: str, point: dict[str, Any] | None) -> list[str]:
    if point is None:
        return ["", f"**{label}**: no threshold meets it."]
    p = point["pooled"]
    lines = [
        "",
        f"**{label}** (threshold {point['threshold']:.4f}): pooled BA "
        f"{p['balanced_accuracy']:.3f} = {pct(p['of_judge_only'])} of judge-only "
        f"{p['judge_only']:.3f}, with {pct(p['escalated'])} of claims escalated; judge cost "
        f"saved {pct(point['judge_cost_saved'])}.",
        "",
    ]
    rows = [
        [s["set"], pct(s["escalated"]), f"{s['balanced_accuracy']:.3f}", pct(s["of_judge_only"])]
        for s in point["sets"]
    ]
    return lines + _table(["set", "escalated", "BA", "of judge-only"], rows)


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"**Judge: {SIMULATED}.** Latency {report['latency']} s a call; price "
        f"${report['price_in']}/M input and ${report['price_out']}/M output tokens.",
        "",
        *_sets_table(report),
    ]
    for accuracy, judge in report["judges"].items():
        for by in RULES:
            lines += ["", f"### {accuracy}% judge, sureness by {by}", ""]
            lines += _curve_table(report, judge[by]["curve"])
            for label, point in judge[by]["points"].items():
                lines += _point_lines(label, point)
    lines += ["", "### Real cascade runs (85% judge)", ""]
    for run in report["verification"]:
        lines.append(
            f"- {run['label']}: sureness by {run['by']} < {run['threshold']:.4f}: "
            f"{run['judge_calls']} judge calls for {run['escalated']} escalated of "
            f"{run['claims']} claims; BA {run['balanced_accuracy']:.3f} (replay "
            f"{run['replayed_ba']:.3f}); {run['seconds']:.0f} s wall against "
            f"{report['judge_only_s']:.0f} s judge-only; mean latency a claim "
            f"{run['claim_latency_s']:.3f} s against {report['judge_call_s']:.3f} s"
        )
    return "\n".join(lines)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    sets = load_sets(args.limit, args.seed)
    print(f"{sum(map(len, sets.values()))} claims in {len(sets)} sets; judge: {SIMULATED}",
          file=sys.stderr)  # fmt: skip
    embedded_checker = EmbeddedChecker()
    embedded, embedded_s = await label_all(embedded_checker, sets, "embedded")
    gold = {name: [bool(gold_supported(e)) for e in rows] for name, rows in sets.items()}
    server = ScriptedOpenAIServer()
    simulated = SimulatedJudge(pooled(sets), args.seed, args.latency)
    server.respond(simulated.reply)
    judge = judge_checker(server, args.concurrency, args.latency)
    prices = Prices(args.price_in, args.price_out)
    report: dict[str, Any] = {
        "judge": SIMULATED, "latency": args.latency, "price_in": args.price_in,
        "price_out": args.price_out, "seed": args.seed, "limit": args.limit,
        "embedded_s": sum(embedded_s.values()), "judges": {}, "verification": [],
    }  # fmt: skip
    report["sets"] = {
        name: {
            "claims": len(rows),
            "supported": sum(gold[name]),
            "embedded_ba": replay(
                gold[name], [embedded[name]], [StageRule()], []
            ).balanced_accuracy,
            "embedded_s": embedded_s[name],
        }
        for name, rows in sets.items()
    }
    for accuracy in (1.0, 0.85):
        simulated.accuracy = accuracy
        server.reset()
        server.respond(simulated.reply)
        judged, seconds = await label_all(judge, sets, f"judge {accuracy:.0%}")
        mismatched = sum(
            v is None or v.label is not simulated.answer(e)
            for e, v in zip(pooled(sets), pooled(judged), strict=True)
        )
        key = f"{accuracy * 100:.0f}"
        report["judges"][key] = analyse(sets, embedded, judged, embedded_checker.support_threshold,
                                        prices)  # fmt: skip
        report["judges"][key].update(
            seconds=sum(seconds.values()),
            calls=len(server.chat_requests()),
            parse_mismatches=mismatched,
        )
    report["judge_only_s"] = report["judges"]["85"]["seconds"]
    report["unknown_claims"], report["ambiguous_claims"] = simulated.unknown, simulated.ambiguous
    simulated.accuracy = 0.85
    report["judge_call_s"] = await call_latency(server, simulated, judge, sets)
    per_claim_embedded = report["embedded_s"] / max(1, sum(map(len, sets.values())))
    for label in ("at_most_40", "equal_to_judge_only"):
        point = report["judges"]["85"]["margin"]["points"][label]
        if point is None:
            continue
        run = await verify(
            sets, server, simulated, judge, embedded_checker, "margin", point["threshold"]
        )
        share = run["escalated"] / run["claims"]
        run.update(label=label, replayed_ba=point["pooled"]["balanced_accuracy"],
                   claim_latency_s=per_claim_embedded + share * report["judge_call_s"])  # fmt: skip
        report["verification"].append(run)
    server.close()
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="claims per set (subsample)")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds a judge call")
    parser.add_argument("--concurrency", type=int, default=128, help="judge calls in flight")
    parser.add_argument("--price-in", type=float, default=2.5, help="$ per million input tokens")
    parser.add_argument("--price-out", type=float, default=10.0, help="$ per million output")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--markdown", type=Path, default=None)
    arguments = parser.parse_args()
    result = asyncio.run(main(arguments))
    text = markdown(result)
    print(text)
    if arguments.json:
        arguments.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    if arguments.markdown:
        arguments.markdown.write_text(text + "\n", encoding="utf-8")
