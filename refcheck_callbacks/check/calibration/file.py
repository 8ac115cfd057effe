"""The calibration file `refcheck calibrate` writes and the monitor reads: pydantic-validated.

It records the checker it was fitted for (`CheckerIdentity`: its name, model, a fingerprint of
its parameters where it has one, and the conflict stage its verdicts went through), the fitted
decision points beside the checker's own, the false-contradiction target, how much data it
was fitted on and the cross-validated figures before and after. A pipeline given a
calibration for another checker refuses it (`CalibrationMismatchError`): the same threshold
means something else on another checker's scores.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from refcheck_callbacks.check.calibration.points import DecisionPoints
from refcheck_callbacks.check.calibration.rates import RateFit, RateName
from refcheck_callbacks.errors import CalibrationError, CalibrationMismatchError


class CheckerIdentity(BaseModel):
    """What a calibration is valid for. `spec` is how it was named, for people; the rest is
    compared."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    model: str | None = None
    """The model a family checker loads (`model_name`), where it has one."""
    fingerprint: str | None = None
    """A digest of the checker's parameters (`fingerprint`), where it has one."""
    conflict: str | None = None
    """The conflict stage's finder (`name`); None without a conflict stage."""
    spec: str | None = None

    def compared(self) -> tuple[str | None, ...]:
        return (self.name, self.model, self.fingerprint, self.conflict)

    def describe(self) -> str:
        parts = [f"checker {self.name!r}"]
        if self.model:
            parts.append(f"model {self.model!r}")
        if self.fingerprint:
            parts.append(f"parameters {self.fingerprint}")
        parts.append(f"conflict stage {self.conflict or 'none'!r}")
        return ", ".join(parts)


def identity_of(
    checker: object, conflict: object | None, spec: str | None = None
) -> CheckerIdentity:
    """The identity of a built checker and conflict finder (None: no conflict stage)."""
    model = getattr(checker, "model_name", None)
    fingerprint = getattr(checker, "fingerprint", None)
    return CheckerIdentity(
        name=str(getattr(checker, "name", type(checker).__name__)),
        model=None if model is None else str(model),
        fingerprint=None if fingerprint is None else str(fingerprint),
        conflict=None if conflict is None else str(getattr(conflict, "name", conflict)),
        spec=spec,
    )


class LabelCounts(BaseModel):
    """How many claims got each label."""

    entailment: int = 0
    neutral: int = 0
    contradiction: int = 0


class Figures(BaseModel):
    """A labelling measured against gold: the binary view (supported or not) that balanced
    accuracy and the false-contradiction rate read, and the confusion behind them."""

    claims: int
    balanced_accuracy: float
    false_contradiction_rate: float | None
    """The share of gold-supported claims labelled Contradiction."""
    auroc: float | None
    """Of P(entailment); calibration leaves it as it was, by design."""
    supported: LabelCounts
    """The labels given to gold-supported claims."""
    unsupported: LabelCounts
    """The labels given to gold-unsupported claims."""


class CrossValidated(BaseModel):
    """Figures on held-out folds (split by response): each fold labelled at the points
    fitted on the others. `before` is the checker's own labels."""

    folds: int
    seed: int
    before: Figures
    after: Figures


class DataSize(BaseModel):
    records: int
    """Labelled records read (bad ones are skipped and counted in `skipped_records`)."""
    skipped_records: int = 0
    responses: int
    claims: int
    """Labelled claims the checker gave a verdict."""
    supported: int
    unsupported: int
    failed_claims: int = 0
    """Labelled claims the checker failed on, left out."""


class Calibration(BaseModel):
    """One app's decision points for one checker (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1] = 1
    """The file's layout version."""
    refcheck_version: str
    created_at: str
    checker: CheckerIdentity
    points: DecisionPoints
    """The fitted decision points, applied by the pipeline."""
    defaults: DecisionPoints
    """The checker's own decision points, for comparison."""
    max_false_contradiction: float = Field(ge=0.0, le=1.0)
    """The false-contradiction rate the fit had to stay within."""
    data: DataSize
    cross_validated: CrossValidated | None = None
    """None when the data has too few responses to hold any out."""
    rates: dict[RateName, RateFit] = Field(default_factory=dict)
    """The checker's flag rates on audit labels, per rate (`rates`): what a prevalence
    estimate adjusts the raw flag share by. Empty without audit labels (uncalibrated)."""
    source: str | None = Field(default=None, exclude=True)
    """Where it was read from, for messages; not written."""

    @property
    def id(self) -> str:
        """A short digest of what this calibration decides (checker, points, rates, when it
        was made): low-cardinality, so results and gauges can say which one they used."""
        content = self.model_dump_json(include={"checker", "points", "rates", "created_at"})
        return hashlib.sha256(content.encode("utf-8")).hexdigest()[:12]

    def verify(self, actual: CheckerIdentity) -> None:
        """`CalibrationMismatchError` unless this calibration was fitted for `actual`."""
        if self.checker.compared() != actual.compared():
            where = f" ({self.source})" if self.source else ""
            raise CalibrationMismatchError(
                f"the calibration{where} was fitted for {self.checker.describe()}; this "
                f"pipeline has {actual.describe()}. Fit one for this checker with `refcheck "
                "calibrate --checker SPEC`, or leave the calibration out"
            )


CalibrationSource = Calibration | str | Path
"""A calibration, or the path of its file."""


def load_calibration(source: CalibrationSource) -> Calibration:
    """The calibration, read and validated; `CalibrationError` names the file and the fault."""
    if isinstance(source, Calibration):
        return source
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CalibrationError(f"cannot read the calibration file {path}: {exc}") from None
    try:
        calibration = Calibration.model_validate_json(text)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'file'}: {error['msg']}"
            for error in exc.errors()[:5]
        )
        raise CalibrationError(
            f"{path} is not a calibration written by `refcheck calibrate`: {problems}"
        ) from None
    return calibration.model_copy(update={"source": str(path)})


def write_calibration(calibration: Calibration, path: Path) -> None:
    path.write_text(calibration.model_dump_json(indent=2) + "\n", encoding="utf-8")
