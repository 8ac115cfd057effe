"""`refcheck alert-rules`: write the Prometheus rules for refcheck's metrics, tuned; simulate
traffic through them; write their promtool tests.

The rules themselves come from `alerting.rules`; this module reads `--set ALERT.FIELD=VALUE`
options into its `AlertTunables` and writes the YAML to a file or stdout. `--simulate
BENCH_JSON` runs the traffic simulator (`alerting.simulator`, numpy and promtool, loaded only
then) on a bench report's label rates and prints its figures; `--promtool-tests FILE` writes
the promtool unit tests the simulator generates for the rules.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from refcheck_callbacks.alerting.rules import rules_yaml
from refcheck_callbacks.alerting.tunables import AlertTunables
from refcheck_callbacks.errors import RefCheckError

SUMMARY = "write Prometheus alerting and recording rules for refcheck's metrics"


def tunables_help() -> str:
    """Every tunable with its default and meaning, for `--help`."""
    lines = ["Tunables (--set ALERT.FIELD=VALUE; durations as in Prometheus: 30s, 10m, 6h):"]
    for alert, field in AlertTunables.model_fields.items():
        lines.append(f"  {alert}:")
        model: Any = field.annotation
        for name, info in model.model_fields.items():
            lines.append(f"    {name} = {info.default}  ({info.description})")
    return "\n".join(lines)


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "alert-rules",
        help=SUMMARY,
        description=f"{SUMMARY}.\n\nWith no --set, the output is the shipped "
        "deploy/prometheus/refcheck-alerts.yml. Load the file with `rule_files` in "
        "prometheus.yml\n(or in a PrometheusRule); check it with `promtool check rules FILE`.",
        epilog=tunables_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=run)
    parser.add_argument(
        "--set", action="append", default=[], metavar="ALERT.FIELD=VALUE", dest="settings",
        help="change one tunable, repeatable (listed below), e.g. share_test.z=4",
    )  # fmt: skip
    parser.add_argument(
        "--output", type=Path, default=None, help="the file to write (default: stdout)"
    )
    _add_simulation_options(parser)


def _add_simulation_options(parser: argparse.ArgumentParser) -> None:
    simulation = parser.add_argument_group(
        "traffic simulation (needs numpy and promtool 2.x; see deploy/README.md)"
    )
    simulation.add_argument(
        "--simulate", type=Path, metavar="BENCH_JSON",
        help="simulate services with the label rates of each set in this bench.json (`refcheck "
        "bench --output-dir`) through the rules; print false pages per 30 days of clean "
        "traffic and the time to detect a shift, per set and volume",
    )  # fmt: skip
    simulation.add_argument(
        "--simulate-relevance", action="store_true",
        help="simulate RefCheckRelevanceDrop instead: services whose references are scored as "
        "three relevance models would (sharp, typical, flat), four references an answer "
        "correlated at 0.5 (0.3 for sharp), then --shift of the answers from a retrieval that "
        "missed; --volume is then answers a minute (default 1, 5 and 25)",
    )  # fmt: skip
    simulation.add_argument(
        "--volume", type=float, action="append", metavar="CLAIMS_PER_MINUTE",
        help="a service's volume, repeatable (default: 5, 20 and 100 claims a minute)",
    )  # fmt: skip
    simulation.add_argument(
        "--shift", type=float, default=0.2, metavar="SHARE",
        help="after the clean traffic, this share of claims is unsupported (default: 0.2)",
    )  # fmt: skip
    simulation.add_argument(
        "--days", type=int, default=30, help="clean days per replayed service (default: 30)"
    )
    simulation.add_argument(
        "--seeds", type=int, default=20, help="replayed services per set and volume (default: 20)"
    )
    simulation.add_argument(
        "--promtool-days", type=float, default=2.0, metavar="DAYS",
        help="clean days of the one service per set and volume that promtool evaluates (and "
        "the replay must match exactly); 0 for none (default: 2; 30 takes 2-3 minutes of CPU "
        "per set and volume)",
    )  # fmt: skip
    simulation.add_argument(
        "--workers", type=int, default=2, help="promtool processes side by side (default: 2)"
    )
    simulation.add_argument(
        "--rules", type=Path, metavar="FILE",
        help="simulate this rule file instead of the generated rules (an older one, say): "
        "promtool alone measures it",
    )  # fmt: skip
    simulation.add_argument(
        "--json", type=Path, metavar="FILE", help="also write the figures as JSON"
    )
    simulation.add_argument(
        "--audit-labels", type=int, default=0, metavar="N",
        help="calibrate every simulated service on N random audit labels (its dashboard and "
        "new-service alerts then read the adjusted rate); 0: uncalibrated (default)",
    )  # fmt: skip
    simulation.add_argument(
        "--audit-unsupported", type=float, default=0.3, metavar="SHARE",
        help="the unsupported share of the audited traffic (default: 0.3)",
    )  # fmt: skip
    simulation.add_argument(
        "--promtool-tests", type=Path, metavar="FILE",
        help="write the promtool unit tests the simulator generates for the rules (the shipped "
        "deploy/prometheus/refcheck-alerts.sim.test.yml); they load the --output file's name, "
        "else refcheck-alerts.yml, from the same folder",
    )  # fmt: skip


def parse_settings(settings: Sequence[str]) -> AlertTunables:
    """`ALERT.FIELD=VALUE` strings as tunables; ValueError names the setting that is wrong."""
    nested: dict[str, dict[str, str]] = {}
    for setting in settings:
        key, equals, value = setting.partition("=")
        alert, dot, field = key.strip().partition(".")
        if not equals or not dot or not field:
            raise ValueError(f"--set {setting!r}: expected ALERT.FIELD=VALUE")
        nested.setdefault(alert, {})[field] = value.strip()
    try:
        return AlertTunables.model_validate(nested)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in exc.errors()
        )
        raise ValueError(f"invalid tunables: {problems}") from exc


def run(args: argparse.Namespace) -> int:
    try:
        tunables = parse_settings(args.settings)
        if args.simulate_relevance:
            return _simulate_relevance(args, tunables)
        if args.simulate is not None:
            return _simulate(args, tunables)
        if args.promtool_tests is not None:
            from refcheck_callbacks.alerting.simulator.rule_tests import rule_tests_yaml

            rules = "refcheck-alerts.yml" if args.output is None else args.output.name
            _write(args.promtool_tests, rule_tests_yaml(tunables, rules))
            if args.output is None:
                return 0
        text = rules_yaml(tunables)
        if args.output is None:
            sys.stdout.write(text)
        else:
            _write(args.output, text)
    except (ValueError, OSError, RefCheckError) as exc:
        print(f"refcheck: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise OSError(f"cannot write {path}: {exc}") from exc
    print(f"refcheck: wrote {path}", file=sys.stderr)


def _check_simulation(args: argparse.Namespace) -> None:
    if args.days < 1 or args.seeds < 1 or args.workers < 1 or args.promtool_days < 0:
        raise ValueError("--days, --seeds and --workers must be at least 1, --promtool-days >= 0")
    if not 0.0 < args.shift <= 1.0 or any(v <= 0 for v in args.volume or ()):
        raise ValueError("--shift must be in (0, 1] and every --volume positive")
    if args.audit_labels < 0 or not 0.0 < args.audit_unsupported < 1.0:
        raise ValueError("--audit-labels must be >= 0 and --audit-unsupported in (0, 1)")


def _simulate_relevance(args: argparse.Namespace, tunables: AlertTunables) -> int:
    from refcheck_callbacks.alerting.simulator.relevance import (
        RelevanceSettings,
        relevance_markdown,
        simulate_relevance,
    )

    _check_simulation(args)
    settings = RelevanceSettings(
        volumes=tuple(args.volume or (1.0, 5.0, 25.0)),
        missed=args.shift,
        days=args.days,
        seeds=args.seeds,
        promtool_days=args.promtool_days,
        workers=args.workers,
    )
    figures = simulate_relevance(settings=settings, tunables=tunables)
    return _report(args, relevance_markdown(figures), figures)


def _simulate(args: argparse.Namespace, tunables: AlertTunables) -> int:
    from refcheck_callbacks.alerting.simulator.report import Settings, markdown, simulate
    from refcheck_callbacks.alerting.simulator.traffic import rates_from_bench

    _check_simulation(args)
    settings = Settings(
        volumes=tuple(args.volume or (5.0, 20.0, 100.0)),
        unsupported=args.shift,
        days=args.days,
        seeds=args.seeds,
        promtool_days=args.promtool_days,
        workers=args.workers,
        audit_labels=args.audit_labels,
        audit_unsupported=args.audit_unsupported,
    )
    figures = simulate(rates_from_bench(args.simulate), settings, tunables, args.rules)
    return _report(args, markdown(figures), figures)


def _report(args: argparse.Namespace, table: str, figures: Sequence[BaseModel]) -> int:
    """A simulation's table on stdout, and its figures as JSON where `--json` asks."""
    sys.stdout.write(table)
    if args.json is not None:
        _write(args.json, json.dumps([f.model_dump() for f in figures], indent=2) + "\n")
    return 0
