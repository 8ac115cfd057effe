"""Issue 30's alert figures, before and after, through the same traffic simulator.

For every shared set's label rates (a bench.json from `refcheck bench --dataset all
--output-dir DIR`) at 5, 20 and 100 claims a minute: false pages per 30 days of clean traffic
and the minutes from a shift to 20% unsupported claims until an alert fires.

- before: a rule file from an older checkout (the rules shipped before issue 30: a fixed 10%
  contradiction floor and 2x a 6 h baseline, a fixed 30% hallucination warning), through
  promtool alone;
- after: the rules this checkout writes, through promtool (which must match the replay on the
  same series) and through the replay on `--seeds` services of 30 days each.

    git show main:deploy/prometheus/refcheck-alerts.yml > /tmp/before.yml
    python benchmarks/alert_sim.py --bench /tmp/bench-main/bench.json --before /tmp/before.yml \\
        --promtool-days 30 --seeds 100 --output-dir /tmp/alert-sim

Writes before.md, after.md and figures.json to the output folder, and prints both tables.
Measured figures: deploy/README.md ("What the simulator measures").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from refcheck_callbacks.alert_sim.report import Settings, markdown, simulate
from refcheck_callbacks.alert_sim.traffic import rates_from_bench


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", type=Path, required=True, help="a bench.json")
    parser.add_argument("--before", type=Path, help="an older rule file to measure as well")
    parser.add_argument("--volume", type=float, action="append", help="claims a minute")
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--promtool-days", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--output-dir", type=Path, default=Path("alert-sim"))
    args = parser.parse_args(argv)
    rates = rates_from_bench(args.bench)
    settings = Settings(
        volumes=tuple(args.volume or (5.0, 20.0, 100.0)),
        days=args.days,
        seeds=args.seeds,
        promtool_days=args.promtool_days,
        workers=args.workers,
    )
    args.output_dir.mkdir(parents=True, exist_ok=True)
    figures: dict[str, object] = {}
    runs = [("after", None)] + ([("before", args.before)] if args.before else [])
    for name, rules in runs:
        started = time.perf_counter()
        found = simulate(rates, settings, rules=rules)
        seconds = time.perf_counter() - started
        table = markdown(found)
        (args.output_dir / f"{name}.md").write_text(table, encoding="utf-8")
        figures[name] = {"seconds": seconds, "figures": [f.model_dump() for f in found]}
        print(f"## {name} ({seconds:.0f} s)\n\n{table}", flush=True)
    (args.output_dir / "figures.json").write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
