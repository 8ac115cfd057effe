"""Issue 44's alert figure: a new service paged on its adjusted rate instead of its raw share.

For every set's label rates in a bench.json (`refcheck bench --output-dir DIR`), at 5, 20 and
100 claims a minute, `--seeds` new services each answer with a share `--unsupported` of
unsupported claims from their first claim, for `--minutes`; the replay (the rules' own
arithmetic, which promtool matches: `refcheck alert-rules --simulate`, and
tests/alerting/simulator/test_replay.py for calibrated services) says when the first share
alert fires. "before": the service is uncalibrated, so the new-service alerts read the raw share
against `level` (80% unsupported); "after": it is calibrated on its own random audit of
`--audit-labels` labels (`--audit-unsupported` of them unsupported), so they read the adjusted
rate's lower bound against `adjusted_level` (30%). `--unsupported 0` measures clean launches:
every page is false.

    python benchmarks/calibrated_launch.py [--bench bench.json] [--unsupported 0.5] [--seeds 20]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from refcheck_callbacks.alerting.simulator.adjusted import audit, fit_columns
from refcheck_callbacks.alerting.simulator.replay import onsets, replay
from refcheck_callbacks.alerting.simulator.rule_tests import SCENARIOS
from refcheck_callbacks.alerting.simulator.traffic import Traffic, counters, rates_from_bench


def _first_page(firing: dict[str, np.ndarray]) -> np.ndarray:
    """Per service, minutes from its first claim to its first page (inf: none)."""
    fired = np.logical_or.reduce(list(firing.values()))
    return np.where(fired.any(axis=-1), fired.argmax(axis=-1).astype(float), np.inf)


def _pages(firing: dict[str, np.ndarray]) -> int:
    return int(sum(onsets(f).sum() for f in firing.values()))


def _minutes(times: np.ndarray, span: int) -> str:
    paged = times[np.isfinite(times)]
    if not len(paged):
        return f"none within {span} min"
    missing = len(times) - len(paged)
    shown = f"{np.median(paged):g} / {paged.max():g}"
    return shown + (f" ({missing} of {len(times)} none)" if missing else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--bench", type=Path, help="a bench.json (default: the rates of rule_tests.SCENARIOS)"
    )
    parser.add_argument("--unsupported", type=float, default=0.5)
    parser.add_argument("--minutes", type=int, default=180)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--audit-labels", type=int, default=200)
    parser.add_argument("--audit-unsupported", type=float, default=0.3)
    args = parser.parse_args()
    print(
        "| set | claims/min | raw share | before: pages, first page median / max min "
        "| after: pages, first page median / max min |"
    )
    print("|---|---:|---:|---|---|")
    sets = rates_from_bench(args.bench) if args.bench else [rates for rates, _ in SCENARIOS]
    for rates in sets:
        for volume in (5.0, 20.0, 100.0):
            traffic = Traffic(rates, volume, 0, args.minutes, unsupported=args.unsupported)
            counts = np.stack([counters(traffic, seed) for seed in range(args.seeds)])
            fits = [
                audit(rates, args.audit_labels, args.audit_unsupported, seed)
                for seed in range(args.seeds)
            ]
            before = replay(counts)
            after = replay(counts, fits=fit_columns(fits))
            raw = rates.hallucination_share(args.unsupported)
            print(
                f"| {rates.name} | {volume:g} | {raw:.2f} "
                f"| {_pages(before)}, {_minutes(_first_page(before), args.minutes)} "
                f"| {_pages(after)}, {_minutes(_first_page(after), args.minutes)} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
