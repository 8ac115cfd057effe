"""How the command line names components: the registered kinds listed for `--help`, and
RefChecker's own option values mapped to specs, so its scripts run unchanged.

Specs resolve in the registry (`contract.registry`), not here.
"""

from __future__ import annotations

from refcheck_callbacks.contract.registry import PY, Role, help_lines
from refcheck_callbacks.errors import ComponentSpecError

REFCHECKER_NLI_MODEL = "ynie/roberta-large-snli_mnli_fever_anli_R1_R2_R3-nli"


def from_refchecker_name(name: str) -> str:
    """The spec for a `refchecker-cli --checker_name / --extractor_name` value, so RefChecker
    scripts run unchanged: `nli` is its RoBERTa NLI model, anything else a litellm model."""
    if name == "nli":
        return f"nli:{REFCHECKER_NLI_MODEL}"
    if name in ("alignscore", "repc"):
        raise ComponentSpecError(
            f"RefChecker's {name!r} checker is not available here; use nli:MODEL, llm:MODEL "
            "or embedded"
        )
    return f"llm:{name}"


def describe(role: Role) -> str:
    """One help line per registered kind of `role`, and the `py:` form, for `--help`."""
    lines = [f"  {name:<11} {text}" for name, text in help_lines(role)]
    lines.append(f"  {PY + ':MOD:OBJ':<11} your own: a class or factory, called without arguments")
    return "\n".join(lines)
