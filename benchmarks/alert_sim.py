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

Writes before.md, after.md (the tables) and before.json, after.json (the figures) to the output
folder, and prints both tables. It runs `refcheck alert-rules --simulate` twice.
Measured figures: deploy/README.md ("What the simulator measures").
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
from pathlib import Path

from refcheck_callbacks.cli.main import main as refcheck


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", type=Path, required=True, help="a bench.json")
    parser.add_argument("--before", type=Path, help="an older rule file to measure as well")
    parser.add_argument("--volume", action="append", help="claims a minute (5, 20, 100)")
    parser.add_argument("--days", default="30")
    parser.add_argument("--seeds", default="100")
    parser.add_argument("--promtool-days", default="30")
    parser.add_argument("--workers", default="2")
    parser.add_argument("--output-dir", type=Path, default=Path("alert-sim"))
    args = parser.parse_args(argv)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    common = ["alert-rules", "--simulate", str(args.bench), "--days", args.days]
    common += ["--seeds", args.seeds, "--promtool-days", args.promtool_days]
    common += ["--workers", args.workers]
    for volume in args.volume or ():
        common += ["--volume", volume]
    runs = [("after", [])] + ([("before", ["--rules", str(args.before)])] if args.before else [])
    for name, extra in runs:
        started, table = time.perf_counter(), io.StringIO()
        figures = args.output_dir / f"{name}.json"
        with contextlib.redirect_stdout(table):
            status = refcheck([*common, *extra, "--json", str(figures)])
        if status:
            return status
        (args.output_dir / f"{name}.md").write_text(table.getvalue(), encoding="utf-8")
        seconds = time.perf_counter() - started
        print(f"## {name} ({seconds:.0f} s)\n\n{table.getvalue()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
