"""Configuration from the environment (`environment_variables`): every variable read, a bad
value refused at start naming the variable and what it accepts, and keywords winning."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted_checkers import KeywordChecker

from refcheck_callbacks import ConfigurationError, Placement, RefCheckMonitor
from refcheck_callbacks.environment_variables import (
    EnvironmentSettings,
    JudgeBudgetSettings,
    read_environment,
)
from refcheck_callbacks.extract.sentences import SentenceExtractor


def test_nothing_set_means_every_default() -> None:
    assert read_environment({}) == EnvironmentSettings()
    assert read_environment({"REFCHECK_CHECKER": "  ", "REFCHECK_SAMPLE_RATE": ""}) == (
        EnvironmentSettings()
    )


def test_every_variable_is_read(tmp_path: Path) -> None:
    calibration = tmp_path / "calibration.json"
    calibration.write_text("{}", encoding="utf-8")
    settings = read_environment(
        {
            "REFCHECK_CHECKER": "nli:cross-encoder/nli-deberta-v3-xsmall",
            "REFCHECK_EXTRACTOR": "llm:gpt-4o-mini",
            "REFCHECK_SAMPLE_RATE": "0.25",
            "REFCHECK_PLACEMENT": "Thread",
            "REFCHECK_EXPORTERS": "opentelemetry",
            "REFCHECK_CALIBRATION": str(calibration),
            "REFCHECK_FEEDBACK_FILE": str(tmp_path / "feedback.jsonl"),
            "REFCHECK_AUDIT_RATE": "0.02",
            "REFCHECK_AUDIT_FILE": str(tmp_path / "audit.jsonl"),
            "REFCHECK_AUDIT_MAX_BYTES": "16 MiB",
            "REFCHECK_EXIT_TIMEOUT": "30",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "TRUE",
            "REFCHECK_JUDGE_BUDGET_USD": "2.50",
            "REFCHECK_JUDGE_BUDGET_TOKENS": "100000",
            "REFCHECK_JUDGE_BUDGET_WINDOW": "7d",
        }
    )
    assert settings == EnvironmentSettings(
        checker="nli:cross-encoder/nli-deberta-v3-xsmall",
        extractor="llm:gpt-4o-mini",
        sample_rate=0.25,
        placement=Placement.THREAD,
        exporters=("opentelemetry",),
        calibration=calibration,
        feedback_file=tmp_path / "feedback.jsonl",
        audit_rate=0.02,
        audit_file=tmp_path / "audit.jsonl",
        audit_max_bytes=16 << 20,
        exit_timeout=30.0,
        capture_content=True,
        judge_budget=JudgeBudgetSettings(usd=2.5, tokens=100_000, window_seconds=7 * 86400),
    )


def test_a_service_url_is_the_remote_checker_on_the_service_placement() -> None:
    settings = read_environment({"REFCHECK_SERVICE_URL": "http://checker:8000"})
    assert (settings.checker, settings.placement) == ("remote:http://checker:8000", "service")
    with pytest.raises(ConfigurationError, match="REFCHECK_CHECKER and REFCHECK_SERVICE_URL"):
        read_environment(
            {"REFCHECK_SERVICE_URL": "http://checker:8000", "REFCHECK_CHECKER": "embedded"}
        )


@pytest.mark.parametrize(
    ("name", "value", "accepted"),
    [
        ("REFCHECK_CHECKER", "minicheck", "is no checker; accepted: cascade, embedded"),
        ("REFCHECK_EXTRACTOR", "spacy", "is no extractor; accepted:"),
        ("REFCHECK_SAMPLE_RATE", "1.5", "a number from 0 to 1"),
        ("REFCHECK_SAMPLE_RATE", "half", "a number from 0 to 1"),
        ("REFCHECK_PLACEMENT", "gpu", "accepted: thread, process, service"),
        ("REFCHECK_EXPORTERS", "opentelemetry,jaeger", "'jaeger' is no exporter"),
        ("REFCHECK_CALIBRATION", "/nowhere/calibration.json", "none is there"),
        ("REFCHECK_SERVICE_URL", "checker:8000", "http:// or https://"),
        ("REFCHECK_EXIT_TIMEOUT", "-1", "a number above 0"),
        ("REFCHECK_AUDIT_RATE", "2", "a number from 0 to 1"),
        ("REFCHECK_AUDIT_MAX_BYTES", "64 MB.", "a whole number of bytes above 0"),
        ("REFCHECK_AUDIT_MAX_BYTES", "0", "a whole number of bytes above 0"),
        ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "maybe", "true or false"),
        ("REFCHECK_JUDGE_BUDGET_USD", "0", "a number above 0"),
        ("REFCHECK_JUDGE_BUDGET_TOKENS", "1e5", "a whole number above 0"),
    ],
)
def test_a_bad_value_names_the_variable_and_what_it_accepts(
    name: str, value: str, accepted: str
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        read_environment({name: value})
    assert str(raised.value).startswith(f"{name}={value!r} cannot be used: ")
    assert accepted in str(raised.value)


def test_a_budget_window_needs_a_budget() -> None:
    with pytest.raises(ConfigurationError, match="REFCHECK_JUDGE_BUDGET_WINDOW is set without"):
        read_environment({"REFCHECK_JUDGE_BUDGET_WINDOW": "1h"})
    assert read_environment(
        {"REFCHECK_JUDGE_BUDGET_TOKENS": "500", "REFCHECK_JUDGE_BUDGET_WINDOW": "90m"}
    ).judge_budget == JudgeBudgetSettings(usd=None, tokens=500, window_seconds=5400.0)


@pytest.mark.parametrize(
    ("value", "captured"),
    [
        ("false", False),
        ("0", False),
        ("NO_CONTENT", False),
        ("On", True),
        ("span_and_event", True),
        ("EVENT_ONLY", True),
    ],
)
def test_content_capture_follows_the_genai_switch(value: str, captured: bool) -> None:
    environ = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": value}
    assert read_environment(environ).capture_content is captured


def test_the_monitor_takes_the_environment_and_keywords_win(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REFCHECK_CHECKER", "py:scripted_checkers:KeywordChecker")
    monkeypatch.setenv("REFCHECK_PLACEMENT", "thread")
    monkeypatch.setenv("REFCHECK_EXPORTERS", "none")
    monkeypatch.setenv("REFCHECK_SAMPLE_RATE", "0")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    with RefCheckMonitor() as from_environment:
        assert isinstance(from_environment.checker, KeywordChecker)
        assert from_environment.exporters == [] and from_environment.capture_content
        assert from_environment.submit(answer="The tower is in Paris.") is False  # rate 0
    with RefCheckMonitor(
        checker=KeywordChecker, extractor=SentenceExtractor, sample_rate=1.0, capture_content=False
    ) as given:
        assert not given.capture_content
        assert given.submit(answer="The tower is in Paris.", references=["Paris."])
        assert given.flush(30)
        assert given.stats.snapshot().get("skipped", {}) == {}


def test_a_bad_variable_fails_the_monitor_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFCHECK_PLACEMENT", "cloud")
    with pytest.raises(ConfigurationError, match="REFCHECK_PLACEMENT='cloud'"):
        RefCheckMonitor(checker=KeywordChecker, placement="thread", exporters=[])


NUMERIC = {
    "REFCHECK_SAMPLE_RATE": ("0.25", 0.25, "a number from 0 to 1, in ASCII digits"),
    "REFCHECK_EXIT_TIMEOUT": ("30", 30.0, "a number above 0, in ASCII digits"),
    "REFCHECK_JUDGE_BUDGET_USD": ("2.5", 2.5, "a number above 0, in ASCII digits"),
    "REFCHECK_JUDGE_BUDGET_TOKENS": ("1000", 1000, "a whole number above 0, in at most 18 ASCII"),
    "REFCHECK_JUDGE_BUDGET_WINDOW": ("90", 90.0, "seconds above 0, or a number with s, m, h or d"),
}
"""Every numeric variable: a good value, what it reads as, and what a bad one is told."""
UNWRITTEN = [
    "¹⁰⁰⁰",
    "١٠",
    "１０",
    "1_000",
    "+5",
    "-5",
    "inf",
    "nan",
    "0x10",
    "1,000",
    "5 0",
    "1" * 5000,
]
"""Numbers Python's `int()` or `float()` may take (or choke on with a message of its own)
that no variable takes: other scripts' digits (superscript, Arabic-Indic, full-width),
separators, signs, infinity, hexadecimal, digits past what `int()` converts."""


def _read_number(name: str, value: str) -> object:
    environ = {name: value}
    if name == "REFCHECK_JUDGE_BUDGET_WINDOW":
        environ["REFCHECK_JUDGE_BUDGET_TOKENS"] = "1"
    settings = read_environment(environ)
    if name.startswith("REFCHECK_JUDGE_BUDGET_"):
        budget = settings.judge_budget
        assert budget is not None
        return {
            "REFCHECK_JUDGE_BUDGET_USD": budget.usd,
            "REFCHECK_JUDGE_BUDGET_TOKENS": budget.tokens,
            "REFCHECK_JUDGE_BUDGET_WINDOW": budget.window_seconds,
        }[name]
    field = {"REFCHECK_SAMPLE_RATE": "sample_rate", "REFCHECK_EXIT_TIMEOUT": "exit_timeout"}
    return getattr(settings, field[name])


@pytest.mark.parametrize("name", sorted(NUMERIC))
def test_every_number_is_read_in_ascii_digits_with_blanks_around_ignored(name: str) -> None:
    good, read, _ = NUMERIC[name]
    assert _read_number(name, good) == read
    assert _read_number(name, f" {good} ") == read


@pytest.mark.parametrize("value", UNWRITTEN, ids=lambda v: v if len(v) < 20 else "5000-digits")
@pytest.mark.parametrize("name", sorted(NUMERIC))
def test_a_number_in_another_writing_is_refused_with_what_the_variable_accepts(
    name: str, value: str
) -> None:
    """Issue 47: a budget of "¹⁰⁰⁰" was refused with Python's `int()` message."""
    with pytest.raises(ConfigurationError) as raised:
        _read_number(name, value)
    message = str(raised.value)
    assert message.startswith(f"{name}={value.strip()!r} cannot be used: accepted: ")
    assert NUMERIC[name][2] in message
    assert "int()" not in message and "literal" not in message and "float" not in message


@pytest.mark.parametrize(
    "value",
    [
        ",,,",
        ",",
        "opentelemetry,",
        ",opentelemetry",
        "opentelemetry,,opentelemetry",
        "opentelemetry,opentelemetry",
        "none,opentelemetry",
        "opentelemetry, none",
    ],
)
def test_an_exporter_list_that_does_not_parse_is_refused(value: str) -> None:
    """Issue 47: `REFCHECK_EXPORTERS=,,,` silently meant no exporters, results going nowhere."""
    with pytest.raises(ConfigurationError) as raised:
        read_environment({"REFCHECK_EXPORTERS": value})
    message = str(raised.value)
    assert message.startswith(f"REFCHECK_EXPORTERS={value!r} cannot be used: ")
    assert "accepted: registered exporter names separated by commas (opentelemetry" in message
    assert read_environment({"REFCHECK_EXPORTERS": " opentelemetry "}).exporters == (
        "opentelemetry",
    )
    assert read_environment({"REFCHECK_EXPORTERS": "None"}).exporters == ()
