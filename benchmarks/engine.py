"""Engine benchmark: the cost of `submit()` on the app's path, and embedded-pipeline throughput.

Workload: answers of 4 sentences against 5 references of ~150 words each, generated from a
fixed seed (facts with names, years and figures; answers copy, alter or invent facts).

- submit: per-call latency of `monitor.submit()` (median, p99, in microseconds) measured while
  the worker is busy checking the earlier submissions: the realistic condition in an app.
- throughput: answers per second through the embedded pipeline, queued (`submit` + `flush`,
  batched across requests) and one by one (`check`), side by side in one run, with the ratio.

Each phase runs in its own process, so a backlog left by one cannot slow the next.

    python benchmarks/engine.py [--answers 200] [--submits 10000]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time

NAMES = ["Alder", "Birch", "Cedar", "Dunmore", "Elling", "Farrow", "Gaskell", "Hollis"]
THINGS = ["bridge", "library", "observatory", "canal", "museum", "railway", "dam", "harbour"]
TOWNS = ["Norwick", "Ashby", "Carran", "Delford", "Easton", "Fenwick", "Garth", "Holm"]


def _fact(rng: random.Random) -> str:
    thing, town, name = rng.choice(THINGS), rng.choice(TOWNS), rng.choice(NAMES)
    year, size = rng.randint(1800, 2020), rng.randint(10, 900)
    return rng.choice(
        [
            f"The {thing} in {town} was completed in {year} under the engineer {name}.",
            f"The {thing} of {town} is {size} metres long and serves the whole district.",
            f"In {year}, the council of {town} voted to extend the {thing} by {size} metres.",
            f"{name} wrote that the {thing} near {town} cost {size} thousand pounds to build.",
        ]
    )


def workload(count: int, seed: int = 13) -> list[dict[str, object]]:
    """Questions, 5 references of ~150 words, and 4-sentence answers."""
    rng = random.Random(seed)
    items = []
    for _ in range(count):
        references = [" ".join(_fact(rng) for _ in range(11)) for _ in range(5)]
        facts = [s + "." for ref in references for s in ref.split(". ") if s]
        copied = rng.sample(facts, 2)
        altered = rng.choice(facts).replace("metres", "kilometres")
        answer = " ".join([*copied, altered, _fact(rng)]).replace("..", ".")
        items.append({"question": "Tell me about the works.", "answer": answer, "refs": references})
    return items


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def phase_submit(submits: int) -> dict[str, float]:
    from refcheck_callbacks import RefCheckMonitor

    items = workload(50)
    monitor = RefCheckMonitor(max_queue=submits + 10, exporters=[], placement="thread")
    monitor.check(answer=items[0]["answer"], references=items[0]["refs"])  # load the model
    costs = []
    for i in range(submits):
        item = items[i % len(items)]
        t0 = time.perf_counter_ns()
        monitor.submit(question=item["question"], answer=item["answer"], references=item["refs"])
        costs.append((time.perf_counter_ns() - t0) / 1000)
        if i % 50 == 0:
            time.sleep(0.001)  # an app does other work between answers; let the worker run
    return {
        "submit_median_us": statistics.median(costs),
        "submit_p99_us": _percentile(costs, 0.99),
        "submit_mean_us": statistics.fmean(costs),
        "submits": submits,
    }


def phase_throughput(answers: int) -> dict[str, float]:
    from refcheck_callbacks import RefCheckMonitor

    queued_items = workload(answers, seed=29)
    direct_items = workload(answers, seed=31)  # other texts: no cache helps the second pass
    with RefCheckMonitor(
        max_queue=answers + 10, exporters=[], batch_size=16, placement="thread"
    ) as monitor:
        warm = workload(1, seed=1)[0]
        monitor.check(answer=warm["answer"], references=warm["refs"])  # load the model
        t0 = time.perf_counter()
        for item in queued_items:
            monitor.submit(
                question=item["question"], answer=item["answer"], references=item["refs"]
            )
        assert monitor.flush(timeout=3600)
        queued = time.perf_counter() - t0
        t0 = time.perf_counter()
        claims = 0
        for item in direct_items:
            result = monitor.check(
                question=item["question"], answer=item["answer"], references=item["refs"]
            )
            claims += len(result.claims)
        direct = time.perf_counter() - t0
    return {
        "answers": answers,
        "claims_per_answer": claims / answers,
        "queued_answers_per_s": answers / queued,
        "one_by_one_answers_per_s": answers / direct,
        "batching_speedup": direct / queued,
    }


def _run_phase(args: list[str]) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--submits", type=int, default=10_000)
    parser.add_argument("--phase", choices=["submit", "throughput"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase == "submit":
        print(json.dumps(phase_submit(args.submits)), flush=True)
        sys.stdout.flush()
        import os

        os._exit(0)  # the worker still holds a backlog: leave without draining it
    if args.phase == "throughput":
        print(json.dumps(phase_throughput(args.answers)))
        return
    submit = _run_phase(["--phase", "submit", "--submits", str(args.submits)])
    throughput = _run_phase(["--phase", "throughput", "--answers", str(args.answers)])
    print(
        f"submit(): median {submit['submit_median_us']:.1f} us, "
        f"p99 {submit['submit_p99_us']:.1f} us over {submit['submits']} calls (worker busy)"
    )
    print(
        f"embedded pipeline: {throughput['queued_answers_per_s']:.1f} answers/s queued (batched), "
        f"{throughput['one_by_one_answers_per_s']:.1f} answers/s one by one "
        f"(x{throughput['batching_speedup']:.2f}); "
        f"{throughput['claims_per_answer']:.1f} claims/answer"
    )
    print(json.dumps({"submit": submit, "throughput": throughput}, indent=2))


if __name__ == "__main__":
    main()
