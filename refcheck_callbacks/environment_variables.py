"""Every environment variable refcheck reads to configure a monitor, and how each is read.

As the OpenTelemetry SDK does (`opentelemetry.sdk.environment_variables`), the names live in
one module: an app run under `opentelemetry-instrument` is configured with nothing but its
environment, and a keyword argument given to `RefCheckMonitor` always wins over the variable.
Each value is read when a monitor is built (or an instrumentor installed): a value refcheck
cannot use raises `ConfigurationError` there, naming the variable and what it accepts, rather
than failing later on the worker where no one would see it. An unset or empty variable means
the keyword's own default. The table of docs/operations.md lists the same variables.

Numbers and lists have one grammar each, whatever Python's `int()` and `float()` would also
take: a number is written in ASCII digits, with an optional decimal point and exponent
(`0.25`, `30`, `1e3`), no sign, no `_` separators, no other script's digits (`¹⁰⁰⁰`, `١٠`),
no `inf` or `nan`; a whole number is ASCII digits only; a list is names separated by commas,
none of them empty or repeated. Blanks around a value are ignored.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from refcheck_callbacks.check.relevance.selection import relevance_spec
from refcheck_callbacks.contract.registry import (
    CHECKERS,
    EXPORTERS,
    EXTRACTORS,
    PY,
    Role,
    registered,
)
from refcheck_callbacks.errors import ConfigurationError
from refcheck_callbacks.types import Placement

REFCHECK_CHECKER = "REFCHECK_CHECKER"
"""The checker spec (`embedded`, `nli:MODEL`, `llm:MODEL`, `cascade:...`, a registered name or
`py:package.module:Factory`): `RefCheckMonitor(checker=)`."""
REFCHECK_EXTRACTOR = "REFCHECK_EXTRACTOR"
"""The extractor spec (`sentence`, `llm:MODEL`, ...): `RefCheckMonitor(extractor=)`."""
REFCHECK_SAMPLE_RATE = "REFCHECK_SAMPLE_RATE"
"""The share of answers checked, from 0 to 1: `RefCheckMonitor(sample_rate=)`."""
REFCHECK_PLACEMENT = "REFCHECK_PLACEMENT"
"""`process`, `thread` or `service`: `RefCheckMonitor(placement=)`."""
REFCHECK_EXPORTERS = "REFCHECK_EXPORTERS"
"""Comma-separated registered exporter names, or `none`: `RefCheckMonitor(exporters=)`."""
REFCHECK_CALIBRATION = "REFCHECK_CALIBRATION"
"""The file `refcheck calibrate` wrote: `RefCheckMonitor(calibration=)`."""
REFCHECK_FEEDBACK_FILE = "REFCHECK_FEEDBACK_FILE"
"""The labelled file people's verdicts are appended to: `RefCheckMonitor(feedback_file=)`."""
REFCHECK_AUDIT_RATE = "REFCHECK_AUDIT_RATE"
"""The share of checked answers drawn at random for a person to label, from 0 to 1:
`RefCheckMonitor(audit_rate=)`."""
REFCHECK_AUDIT_FILE = "REFCHECK_AUDIT_FILE"
"""The file the audit's drawn answers are appended to: `RefCheckMonitor(audit_file=)`."""
REFCHECK_AUDIT_MAX_BYTES = "REFCHECK_AUDIT_MAX_BYTES"
"""The audit file's size bound, in bytes or with a unit (`64MiB`, `1GB`):
`RefCheckMonitor(audit_max_bytes=)`."""
REFCHECK_EXIT_TIMEOUT = "REFCHECK_EXIT_TIMEOUT"
"""Seconds to finish queued work at interpreter exit: `RefCheckMonitor(exit_timeout=)`. A
script run under `opentelemetry-instrument` cannot call `flush`; this is its flush."""
REFCHECK_SERVICE_URL = "REFCHECK_SERVICE_URL"
"""A `refcheck serve` service to check on: the checker `remote:URL`, placement `service`."""
REFCHECK_SERVE_TOKEN = "REFCHECK_SERVE_TOKEN"
"""The bearer token sent to (and required by) a `refcheck serve` service."""
REFCHECK_JUDGE_BUDGET_USD = "REFCHECK_JUDGE_BUDGET_USD"
"""US dollars `llm:` judges and extractors may spend per budget window."""
REFCHECK_JUDGE_BUDGET_TOKENS = "REFCHECK_JUDGE_BUDGET_TOKENS"
"""Tokens (prompt and output) `llm:` judges and extractors may use per budget window."""
REFCHECK_JUDGE_BUDGET_WINDOW = "REFCHECK_JUDGE_BUDGET_WINDOW"
"""The rolling window of the judge budget: seconds, or a number with `s`, `m`, `h` or `d`."""
REFCHECK_RELEVANCE = "REFCHECK_RELEVANCE"
"""How diagnostics score relevance: `embedded` (the offline head) or `llm:MODEL` (an LLM
relevance judge): `RefCheckMonitor(relevance=)`."""
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = (
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
)
"""The GenAI instrumentations' content switch: `true` lets the exporters include question,
answer, claim and document text (`RefCheckMonitor(capture_content=)`)."""

SERVICE_PLACEMENT = Placement.SERVICE
"""The placement a monitor given `REFCHECK_SERVICE_URL` (and no placement) takes."""

# The variable is shared with other GenAI instrumentations: their spellings are taken too.
_TRUE = frozenset({"true", "1", "yes", "on", "span_only", "event_only", "span_and_event"})
_FALSE = frozenset({"false", "0", "no", "off", "no_content"})
_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_WHOLE = re.compile(r"[0-9]+")
_MAX_DIGITS = 18
"""Digits of a whole number at most (Python's `int()` refuses text past 4,300 in a message of
its own)."""
_DURATION = re.compile(r"(?P<number>" + _NUMBER.pattern + r")\s*(?P<unit>[smhd]?)")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_SIZE = re.compile(r"(?P<number>[0-9]{1,18})\s*(?P<unit>|b|kb|mb|gb|kib|mib|gib)")
_BYTES = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9}
_BYTES |= {"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}

T = TypeVar("T")


@dataclass(frozen=True)
class JudgeBudgetSettings:
    """The judge budget the environment asks for: at least one of `usd` and `tokens`."""

    usd: float | None
    tokens: int | None
    window_seconds: float | None
    """None: the budget's own default window."""


@dataclass(frozen=True)
class EnvironmentSettings:
    """What the environment says of a monitor's options; None where it says nothing."""

    checker: str | None = None
    extractor: str | None = None
    sample_rate: float | None = None
    placement: Placement | None = None
    exporters: tuple[str, ...] | None = None
    calibration: Path | None = None
    feedback_file: Path | None = None
    audit_rate: float | None = None
    audit_file: Path | None = None
    audit_max_bytes: int | None = None
    exit_timeout: float | None = None
    capture_content: bool | None = None
    judge_budget: JudgeBudgetSettings | None = None
    relevance: str | None = None


def read_environment(environ: Mapping[str, str] | None = None) -> EnvironmentSettings:
    """The monitor's options the environment sets (`os.environ` by default); raises
    `ConfigurationError` naming the first variable whose value cannot be used."""
    env = os.environ if environ is None else environ
    checker = _read(env, REFCHECK_CHECKER, lambda v: _spec(v, CHECKERS))
    service = _read(env, REFCHECK_SERVICE_URL, _service_url)
    placement = _read(env, REFCHECK_PLACEMENT, _placement)
    if service is not None:
        if checker is not None:
            raise ConfigurationError(
                f"{REFCHECK_CHECKER} and {REFCHECK_SERVICE_URL} are both set: the service is "
                f"the checker (remote:URL); set one of them"
            )
        checker = f"remote:{service}"
        placement = placement or SERVICE_PLACEMENT
    return EnvironmentSettings(
        checker=checker,
        extractor=_read(env, REFCHECK_EXTRACTOR, lambda v: _spec(v, EXTRACTORS)),
        sample_rate=_read(env, REFCHECK_SAMPLE_RATE, _share),
        placement=placement,
        exporters=_read(env, REFCHECK_EXPORTERS, _exporter_names),
        calibration=_read(env, REFCHECK_CALIBRATION, _existing_file),
        feedback_file=_read(env, REFCHECK_FEEDBACK_FILE, Path),
        audit_rate=_read(env, REFCHECK_AUDIT_RATE, _share),
        audit_file=_read(env, REFCHECK_AUDIT_FILE, Path),
        audit_max_bytes=_read(env, REFCHECK_AUDIT_MAX_BYTES, _size),
        exit_timeout=_read(env, REFCHECK_EXIT_TIMEOUT, _positive),
        capture_content=_read(env, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, _switch),
        judge_budget=_judge_budget(env),
        relevance=_read(env, REFCHECK_RELEVANCE, relevance_spec),
    )


def _read(env: Mapping[str, str], name: str, parse: Callable[[str], T]) -> T | None:
    """`parse` of the variable's value; None when it is unset or blank. `parse` raises
    ValueError saying what is accepted; the error names the variable and the value."""
    value = env.get(name, "").strip()
    if not value:
        return None
    try:
        return parse(value)
    except ValueError as exc:
        raise ConfigurationError(f"{name}={value!r} cannot be used: {exc}") from None


def _spec(value: str, role: Role) -> str:
    """A spec whose kind is registered for `role` (its argument is checked when it is built)."""
    name = value.partition(":")[0]
    if name != PY and name not in registered(role):
        known = ", ".join([*registered(role), f"{PY}:package.module:Factory"])
        raise ValueError(f"{name!r} is no {role.name}; accepted: {known}")
    return value


def _service_url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise ValueError("a service URL starts with http:// or https://")
    return value


def _placement(value: str) -> Placement:
    try:
        return Placement(value.lower())
    except ValueError:
        raise ValueError(f"accepted: {', '.join(p.value for p in Placement)}") from None


def _number(value: str) -> float:
    """The number `value` writes in the grammar of the module's docstring; NaN otherwise."""
    if _NUMBER.fullmatch(value) is None:
        return math.nan
    number = float(value)
    return number if math.isfinite(number) else math.nan


def _share(value: str) -> float:
    share = _number(value)
    if not 0.0 <= share <= 1.0:
        raise ValueError("accepted: a number from 0 to 1, in ASCII digits (0.25)")
    return share


def _exporter_names(value: str) -> tuple[str, ...]:
    if value.lower() == "none":
        return ()
    names = tuple(name.strip() for name in value.split(","))
    known = ", ".join(registered(EXPORTERS))
    accepted = f"accepted: registered exporter names separated by commas ({known}), or none"
    if "" in names:
        raise ValueError(f"an exporter name is empty; {accepted}")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{repeated[0]!r} is named twice; {accepted}")
    for name in names:
        if name.lower() == "none":
            raise ValueError(f"none means no exporter and stands alone; {accepted}")
        _spec(name, EXPORTERS)
    return names


def _existing_file(value: str) -> Path:
    path = Path(value).expanduser()
    if not path.is_file():
        raise ValueError("accepted: the path of a file refcheck calibrate wrote; none is there")
    return path


def _switch(value: str) -> bool:
    lowered = value.lower()
    if lowered in _TRUE or lowered in _FALSE:
        return lowered in _TRUE
    raise ValueError(
        "accepted: true or false (or NO_CONTENT, SPAN_ONLY, EVENT_ONLY, SPAN_AND_EVENT)"
    )


def _positive(value: str) -> float:
    number = _number(value)
    if not number > 0:
        raise ValueError("accepted: a number above 0, in ASCII digits (2.5)")
    return number


def _whole(value: str) -> int:
    if _WHOLE.fullmatch(value) is None or len(value) > _MAX_DIGITS or int(value) == 0:
        raise ValueError(
            f"accepted: a whole number above 0, in at most {_MAX_DIGITS} ASCII digits (100000)"
        )
    return int(value)


def _size(value: str) -> int:
    match = _SIZE.fullmatch(value.lower())
    size = 0 if match is None else int(match["number"]) * _BYTES[match["unit"]]
    if not size:
        raise ValueError(
            "accepted: a whole number of bytes above 0, or one with KB, MB, GB, KiB, MiB or "
            "GiB (64MiB), in ASCII digits"
        )
    return size


def _duration(value: str) -> float:
    match = _DURATION.fullmatch(value.lower())
    seconds = math.nan if match is None else _number(match["number"]) * _SECONDS[match["unit"]]
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ValueError(
            "accepted: seconds above 0, or a number with s, m, h or d (7d), in ASCII digits"
        )
    return seconds


def _judge_budget(env: Mapping[str, str]) -> JudgeBudgetSettings | None:
    usd = _read(env, REFCHECK_JUDGE_BUDGET_USD, _positive)
    tokens = _read(env, REFCHECK_JUDGE_BUDGET_TOKENS, _whole)
    window = _read(env, REFCHECK_JUDGE_BUDGET_WINDOW, _duration)
    if usd is None and tokens is None:
        if window is not None:
            raise ConfigurationError(
                f"{REFCHECK_JUDGE_BUDGET_WINDOW} is set without a budget: set "
                f"{REFCHECK_JUDGE_BUDGET_USD}, {REFCHECK_JUDGE_BUDGET_TOKENS} or both"
            )
        return None
    return JudgeBudgetSettings(usd=usd, tokens=tokens, window_seconds=window)
