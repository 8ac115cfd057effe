"""Issue 37's figure: how soon a new service's contradiction burst pages, before and after.

For every shared set's label rates (a bench.json from `refcheck bench --dataset all
--output-dir DIR`) at 5, 20 and 100 claims a minute, `--seeds` new services each draw 20
minutes of fully supported answers from their first claim, then 49% contradicted claims for 3
hours; the replay (the rules' own arithmetic, which promtool matches: `refcheck alert-rules
--simulate`) says when the first share alert fires. "before" counts the rise alerts only (the
rules before issue 37 had no other share alert; the rises did not change), "after" every share
alert, the new-service ones included.

    python benchmarks/new_service_burst.py --bench /tmp/bench/bench.json [--seeds 20]

Prints one row per volume: before's median and largest minutes to the first page (or how many
services had none within the 3 hours), after's, and the share paged within 40 minutes.
Measured figures: deploy/README.md ("A new service pages on an absolute level").
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from refcheck_callbacks.alerting.share_rules import SHARES
from refcheck_callbacks.alerting.simulator.replay import replay
from refcheck_callbacks.alerting.simulator.traffic import (
    LabelRates,
    Traffic,
    counters,
    rates_from_bench,
)

HISTORY_MINUTES = 20
BURST_MINUTES = 180
BURST = (0.51, 0.0, 0.49)
"""Entailment, neutral, contradiction shares of the burst's claims: the issue's 49%."""
TARGET_MINUTES = 40


def minutes_to_page(firing: dict[str, np.ndarray], alerts: list[str]) -> np.ndarray:
    """Per service, minutes from the burst to the first firing of any of `alerts` (inf: none)."""
    after = np.logical_or.reduce([firing[a][..., HISTORY_MINUTES + 1 :] for a in alerts])
    return np.where(after.any(axis=-1), after.argmax(axis=-1) + 1.0, np.inf)


def burst(rates: LabelRates, volume: float, seeds: int) -> dict[str, np.ndarray]:
    """The replay's firing for `seeds` new services with `rates`' clean traffic, then the burst
    (every claim drawn from the burst's mix)."""
    bursting = LabelRates(name=f"{rates.name}-burst", supported=rates.supported, unsupported=BURST)
    traffic = Traffic(bursting, volume, HISTORY_MINUTES, BURST_MINUTES, unsupported=1.0)
    return replay(np.stack([counters(traffic, seed) for seed in range(seeds)]))


def _minutes(times: np.ndarray) -> str:
    paged = times[np.isfinite(times)]
    if len(paged) < len(times):
        return f"{len(times) - len(paged)} of {len(times)} not within {BURST_MINUTES} min"
    return f"{np.median(paged):g} / {paged.max():g}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", type=Path, required=True, help="a bench.json")
    parser.add_argument("--seeds", type=int, default=20, help="new services per set and volume")
    args = parser.parse_args()
    rises = [share.alert for share in SHARES]
    print(
        "| claims/min | before: median / max min | after: median / max min | after within 40 min |"
    )
    print("|---:|---|---|---:|")
    for volume in (5.0, 20.0, 100.0):
        before, after = [], []
        for rates in rates_from_bench(args.bench):
            firing = burst(rates, volume, args.seeds)
            before.append(minutes_to_page(firing, rises))
            after.append(minutes_to_page(firing, list(firing)))
        old, new = np.concatenate(before), np.concatenate(after)
        within = f"{int((new <= TARGET_MINUTES).sum())} of {len(new)}"
        print(f"| {volume:g} | {_minutes(old)} | {_minutes(new)} | {within} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
