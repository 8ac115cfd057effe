"""Simulated series through the real `promtool test rules`, and what fired, read back.

promtool only says where a test's expectation is wrong, so each series becomes one test group
whose PromQL tests ask the question directly, over the `ALERTS` series the rules wrote:

- pages: `sum_over_time((firing unless firing offset 1m)[...:1m])` by alert name, one day at a
  time (promtool's test engine loads at most 10,000 samples per query; a day of two alerts
  firing throughout is 5,760), over the clean minutes;
- detection: the first minute after the shift at which a share alert is firing.

With the replay's prediction as the expectation, a passing group means promtool and the replay
agree exactly; a failing one prints what promtool found, which is read back (and, for rules the
replay does not model, such as an older rule file, is the whole answer).

Ranges are read as Prometheus 2.x reads them (both ends included), as the replay does:
promtool 3.x is refused.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from refcheck_callbacks.alerting.simulator.replay import onsets
from refcheck_callbacks.alerting.simulator.traffic import VERDICTS
from refcheck_callbacks.alerting.tunables import duration_seconds
from refcheck_callbacks.check.calibration.rates import RateFit, RateName
from refcheck_callbacks.errors import PromtoolError
from refcheck_callbacks.exporters.names import (
    CALIBRATION_FLAGGED_NEGATIVES,
    CALIBRATION_FLAGGED_POSITIVES,
    CALIBRATION_ID,
    CALIBRATION_LABELS,
    CALIBRATION_NEGATIVES,
    CALIBRATION_POSITIVES,
    CLAIMS,
    HALLUCINATION_RATIO,
    PROMETHEUS,
)

if TYPE_CHECKING:
    import numpy as np

_ID = CALIBRATION_ID.replace(".", "_")
CHUNK_MINUTES = 1440
"""Minutes of pages per query: 4 x 1,441 samples of two alerts firing throughout, under 10,000."""
_FAILURE = re.compile(r'expr: (".*?(?<!\\)"), time: (\S+),\n\s*exp: (.*)\n\s*got: (.*)')
_ERROR = re.compile(r'expr: (".*?(?<!\\)"), time: (\S+), err: (.*)')
_SAMPLE = re.compile(r"(\{[^}]*\}) (\S+?)(?:, |$)")


def promtool_binary() -> str:
    """promtool 2.x from PATH; PromtoolError says what to install otherwise."""
    binary = shutil.which("promtool")
    if binary is None:
        raise PromtoolError("promtool not found: install Prometheus 2.x (Debian: prometheus)")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    found = re.search(r"version (\d+)\.", version.stdout + version.stderr)
    if found is None or found.group(1) != "2":
        raise PromtoolError(
            f"the simulator reads ranges as Prometheus 2.x does; {binary} is not 2.x: "
            f"{(version.stdout or version.stderr).splitlines()[:1]}"
        )
    return binary


@dataclass(frozen=True)
class Series:
    """One simulated service: its counters, where the shift starts, and optionally the
    replay's firing per alert (then promtool must agree with it)."""

    job: str
    counts: np.ndarray
    """Cumulative claims per verdict at minutes 0..N, shape (N + 1, 3)."""
    clean_minutes: int
    predicted: dict[str, np.ndarray] | None = None
    fits: dict[RateName, RateFit] | None = None
    """The calibration every claim is counted under (its gauges are exported); None: the
    service is uncalibrated."""


@dataclass(frozen=True)
class Observed:
    pages: dict[str, int]
    """Alert -> times it started firing at minutes 0..clean_minutes (clean traffic only)."""
    firing_minutes: dict[str, int]
    """Alert -> minutes it was firing at minutes 0..clean_minutes."""
    detected_after: int | None
    """Minutes after the shift until a share alert fired; None: not in the simulated span."""
    firing_at_shift: bool
    """A share alert was already firing when the shift began (a false page still on)."""


@dataclass(frozen=True)
class Query:
    expr: str
    minute: int
    expected: dict[str, float] = field(default_factory=dict)
    """Labels -> value: the replay's answer (empty: nothing, and for rules it does not model)."""


SIMULATED_CALIBRATION = "5157ca11b2a7"
"""The calibration id of a calibrated simulated service."""


def input_series(
    job: str, counts: np.ndarray, fits: dict[RateName, RateFit] | None = None
) -> list[dict[str, str]]:
    """The claims counter by verdict (and calibration, with `fits`), the calibration gauges,
    and the answers' hallucination ratio histogram's sum and count (one claim per answer: its
    ratio is 0 or 1), which older rule files read."""
    calibration = "" if fits is None else f',{_ID}="{SIMULATED_CALIBRATION}"'
    columns = {
        f'{PROMETHEUS[CLAIMS]}{{job="{job}",refcheck_verdict="{verdict}"{calibration}}}': counts[
            :, index
        ]
        for index, verdict in enumerate(VERDICTS)
    }
    ratio = PROMETHEUS[HALLUCINATION_RATIO]
    columns[f'{ratio}_sum{{job="{job}"}}'] = counts[:, 1] + counts[:, 2]
    columns[f'{ratio}_count{{job="{job}"}}'] = counts.sum(axis=1)
    series = [
        {"series": name, "values": " ".join(str(int(value)) for value in values)}
        for name, values in columns.items()
    ]
    for rate, fit in (fits or {}).items():
        labels = f'job="{job}",refcheck_rate="{rate.value}"{calibration}'
        for gauge, value in (
            (CALIBRATION_POSITIVES, fit.positives),
            (CALIBRATION_NEGATIVES, fit.negatives),
            (CALIBRATION_FLAGGED_POSITIVES, fit.flagged_positives),
            (CALIBRATION_FLAGGED_NEGATIVES, fit.flagged_negatives),
            (CALIBRATION_LABELS, fit.labels),
        ):
            series.append(
                {
                    "series": f"{PROMETHEUS[gauge]}{{{labels}}}",
                    "values": f"{value}x{len(counts) - 1}",
                }
            )
    return series


def _firing(job: str, alerts: Sequence[str]) -> str:
    return f'ALERTS{{alertstate="firing",job="{job}",alertname=~"{"|".join(alerts)}"}}'


def page_queries(
    series: Series, alerts: Sequence[str], chunk_minutes: int = CHUNK_MINUTES
) -> list[Query]:
    """Pages (alerts starting to fire) and minutes firing at minutes 0..clean_minutes, a day
    (`chunk_minutes`) per query: two queries a day, pages first."""
    firing = _firing(series.job, alerts)
    queries, first = [], 0
    while first <= series.clean_minutes:
        last = min(first + chunk_minutes - 1, series.clean_minutes)
        if last == series.clean_minutes - 1:
            last += 1  # no one-minute chunk: a subquery's range must be longer than its step
        span = f"[{last - first}m"
        pages = (
            f"sum by (alertname) (sum_over_time(({firing} unless {firing} offset 1m){span}:1m]))"
        )
        minutes = f"sum by (alertname) (count_over_time({firing}{span}]))"
        queries += [
            Query(pages, last, _predicted(series, onsets, first, last)),
            Query(minutes, last, _predicted(series, lambda f: f, first, last)),
        ]
        first = last + 1
    return queries


def _predicted(
    series: Series, per_minute: Callable[[np.ndarray], np.ndarray], first: int, last: int
) -> dict[str, float]:
    """The replay's count of `per_minute` over minutes first..last, by alert."""
    expected = {}
    for alert, firing in (series.predicted or {}).items():
        if count := int(per_minute(firing)[first : last + 1].sum()):
            expected[f'{{alertname="{alert}"}}'] = float(count)
    return expected


def detection_query(series: Series, alerts: Sequence[str]) -> Query:
    """The first firing minute after the shift, in minutes after it."""
    end = len(series.counts) - 1
    shifted = end - series.clean_minutes
    expr = (
        f"(min(min_over_time(timestamp({_firing(series.job, alerts)})[{shifted - 1}m:1m]))"
        f" - {series.clean_minutes * 60}) / 60"
    )
    expected = {}
    if (first := first_firing(series.predicted or {}, series.clean_minutes)) is not None:
        expected["{}"] = float(first[0])
    return Query(expr, end, expected)


def firing_query(series: Series, alerts: Sequence[str]) -> Query:
    """How many share alerts are firing at the last clean minute."""
    expected = {}
    predicted = series.predicted or {}
    if count := sum(bool(firing[series.clean_minutes]) for firing in predicted.values()):
        expected["{}"] = float(count)
    expr = f"count({_firing(series.job, alerts)})"
    return Query(expr, series.clean_minutes, expected)


def first_firing(firing: dict[str, np.ndarray], clean_minutes: int) -> tuple[int, list[str]] | None:
    """The first minute after the shift at which an alert fires (in minutes after it), and the
    alerts firing then; None when none fires."""
    for minute in range(clean_minutes + 1, max((len(f) for f in firing.values()), default=0)):
        if fired := [alert for alert, f in firing.items() if f[minute]]:
            return minute - clean_minutes, fired
    return None


Inputs = Callable[[str, "np.ndarray"], list[dict[str, str]]]
"""What a series' counts are as promtool input series, where not the claims counter and the
calibration gauges (`input_series`)."""


def promtool_group(
    name: str, series: Series, queries: Sequence[Query], inputs: Inputs | None = None
) -> dict[str, Any]:
    return {
        "name": name,
        "interval": "1m",
        "input_series": (
            input_series(series.job, series.counts, series.fits)
            if inputs is None
            else inputs(series.job, series.counts)
        ),
        "promql_expr_test": [
            {
                "expr": query.expr,
                "eval_time": f"{query.minute}m",
                "exp_samples": [
                    {"labels": labels, "value": value} for labels, value in query.expected.items()
                ],
            }
            for query in queries
        ],
    }


def run_groups(rules: Path, groups: Sequence[dict[str, Any]], workers: int = 1) -> str:
    """promtool's report on the test groups (several processes in parallel): the failure
    blocks of all of them, concatenated. Raises PromtoolError on anything but a test failure."""
    binary = promtool_binary()
    with tempfile.TemporaryDirectory(prefix="refcheck-alert-sim-") as folder:
        files = []
        for index in range(max(1, min(workers, len(groups)))):
            path = Path(folder) / f"sim-{index}.test.yml"
            document = {
                "rule_files": [str(rules.resolve())],
                "evaluation_interval": "1m",
                "tests": list(groups[index::workers]),
            }
            path.write_text(json.dumps(document), encoding="utf-8")  # JSON is YAML
            files.append(path)
        with ThreadPoolExecutor(len(files)) as pool:
            outputs = list(pool.map(lambda path: _promtool(binary, path), files))
    return "\n".join(outputs)


def _promtool(binary: str, path: Path) -> str:
    done = subprocess.run(
        [binary, "test", "rules", path.name], cwd=path.parent, capture_output=True, text=True
    )
    output = done.stdout + done.stderr
    if done.returncode not in (0, 1) or (done.returncode == 1 and "FAILED:" not in output):
        raise PromtoolError(f"promtool test rules failed to run:\n{output[-4000:]}")
    if errors := _ERROR.findall(output):
        raise PromtoolError(f"promtool could not evaluate {errors[0][0]}: {errors[0][2]}")
    return output


def observed(output: str, queries: Sequence[Query]) -> list[dict[str, float]]:
    """Each query's samples as promtool found them: its expectation where promtool reported
    nothing (the test passed), what it got where it failed. A query is its expression and its
    time: a day's pages read like every other day's."""
    got = {}
    for expr, time, _expected, found in _FAILURE.findall(output):
        samples = {} if found.strip() == "nil" else dict(_SAMPLE.findall(found.strip()))
        minute = round(duration_seconds(time) / 60)
        got[json.loads(expr), minute] = {labels: float(value) for labels, value in samples.items()}
    return [got.get((query.expr, query.minute), query.expected) for query in queries]


def _by_alert(found: Sequence[dict[str, float]], alerts: Sequence[str]) -> dict[str, int]:
    counted = dict.fromkeys(alerts, 0)
    for samples in found:
        for labels, value in samples.items():
            counted[labels.split('"')[1]] += int(value)
    return counted


def observe(
    rules: Path,
    named: Sequence[tuple[str, Series]],
    alerts: Sequence[str],
    workers: int = 1,
    chunk_minutes: int = CHUNK_MINUTES,
    inputs: Inputs | None = None,
) -> list[Observed]:
    """Run each named series through promtool with `rules`; what fired, per series.

    Raises PromtoolError when a series carries the replay's prediction and promtool found
    something else: the replay's figures would then not be the rules'."""
    plans = [
        [
            *page_queries(series, alerts, chunk_minutes),
            firing_query(series, alerts),
            detection_query(series, alerts),
        ]
        for _, series in named
    ]
    groups = [
        promtool_group(name, series, queries, inputs)
        for (name, series), queries in zip(named, plans, strict=True)
    ]
    output = run_groups(rules, groups, workers)
    results, disagreements = [], []
    for (name, series), queries in zip(named, plans, strict=True):
        found = observed(output, queries)
        if series.predicted is not None:
            disagreements += [
                f"{name}: {query.expr} at {query.minute}m: replay {query.expected}, promtool {got}"
                for query, got in zip(queries, found, strict=True)
                if got != query.expected
            ]
        pages, minutes = _by_alert(found[:-2:2], alerts), _by_alert(found[1:-2:2], alerts)
        detected = found[-1].get("{}")
        at_shift = bool(found[-2])
        results.append(
            Observed(pages, minutes, None if detected is None else int(detected), at_shift)
        )
    if disagreements:
        raise PromtoolError("promtool and the replay disagree:\n" + "\n".join(disagreements[:10]))
    return results
