"""Calibrations built for tests: the real file model, with chosen decision points."""

from __future__ import annotations

from refcheck_callbacks.check.calibration.file import (
    Calibration,
    CheckerIdentity,
    DataSize,
    identity_of,
)
from refcheck_callbacks.check.calibration.points import DecisionPoints, defaults_of
from refcheck_callbacks.check.conflict.stated_facts import StatedFactFinder
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker


def embedded_identity() -> CheckerIdentity:
    """What the default monitor runs: the embedded checker, the stated-fact conflict stage."""
    return identity_of(EmbeddedChecker(), StatedFactFinder(), "embedded")


def calibration_for(identity: CheckerIdentity, points: DecisionPoints) -> Calibration:
    """A calibration for `identity` at `points` (figures left out)."""
    return Calibration(
        refcheck_version="test",
        created_at="2026-01-01T00:00:00+00:00",
        checker=identity,
        points=points,
        defaults=defaults_of(EmbeddedChecker()),
        max_false_contradiction=0.01,
        data=DataSize(records=1, responses=1, claims=2, supported=1, unsupported=1),
    )
