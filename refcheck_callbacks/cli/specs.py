"""Building extractors and checkers from short text specs, as the `refcheck` command takes them.

A spec is `KIND` or `KIND:ARGUMENT`: `embedded`, `sentence`, `nli:MODEL`, `llm:MODEL`,
`remote:URL` (a `refcheck serve` service), or
`py:package.module:Factory` for a component of your own. Implementations are imported by module
path only when a spec names them, so the command works (and says clearly what is missing)
whatever optional parts are installed.

A model can be named with its family or preset in front, `NAME@MODEL`:
`nli:minicheck-flan-t5@/models/mc` (a directory whose name does not say its family),
`llm:bespoke-minicheck@hosted_vllm/bespoke` (a vLLM-served checker LLM with its own prompt).
A cascade lists its stages from cheapest to dearest, each with the confidence below which it
passes a claim on, optionally `margin` (sureness measured as P(entailment)'s distance from the
checker's decision point instead of the label's probability), and labels it always passes on:
`cascade:embedded[margin,0.12]>nli:lytang/MiniCheck-Flan-T5-Large[0.9,contradiction]>llm:gpt-4o-mini`.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from refcheck_callbacks.check.base import Checker
from refcheck_callbacks.engine.protocols import implementing
from refcheck_callbacks.errors import (
    ComponentSpecError,
    MissingExtraError,
    ProtocolError,
    RefCheckError,
)
from refcheck_callbacks.extract.base import Extractor


@dataclass(frozen=True)
class _Kind:
    module: str
    attribute: str
    argument: str | None
    """The keyword the spec's argument is passed as; None when the kind takes no argument."""
    help: str
    serves_api: bool = False
    """Takes `api_base`: the model is served behind an OpenAI-compatible endpoint (vLLM)."""
    variant: str | None = None
    """The keyword a `NAME@` prefix of the argument is passed as (a family, a preset)."""


CHECKER_KINDS: dict[str, _Kind] = {
    "embedded": _Kind(
        "refcheck_callbacks.check.embedded.checker",
        "EmbeddedChecker",
        None,
        "offline learned checker on static MiniLM vectors: CPU, no key, no download (default)",
    ),
    "nli": _Kind(
        "refcheck_callbacks.check.nli.checker",
        "NLIChecker",
        "model",
        "nli:MODEL or nli:FAMILY@MODEL, a grounding model by hub name or path: MiniCheck, "
        "HHEM, FactCG, AlignScore or any 2- / 3-way NLI classifier (the family is recognised "
        "from name and config; name it when it is not)",
        variant="family",
    ),
    "llm": _Kind(
        "refcheck_callbacks.check.judge.checker",
        "LLMChecker",
        "model",
        "llm:MODEL or llm:PRESET@MODEL, an LLM judge through litellm (llm:gpt-4o-mini), or "
        "a checker LLM with its published prompt (bespoke-minicheck@hosted_vllm/NAME, "
        "granite-guardian@hosted_vllm/NAME)",
        serves_api=True,
        variant="preset",
    ),
    "remote": _Kind(
        "refcheck_callbacks.check.remote",
        "RemoteChecker",
        "url",
        "remote:URL, the checker of a `refcheck serve` service (token: $REFCHECK_SERVE_TOKEN)",
    ),
}
CASCADE_HELP = (
    "cascade:SPEC[T]>SPEC[margin,T,LABEL]>SPEC, stages from cheapest to dearest; a claim whose "
    "confidence (with margin: P(entailment)'s distance from the checker's decision point) is "
    "below T, or labelled LABEL, goes on to the next stage"
)
_STAGE = re.compile(r"^(?P<spec>.+?)(?:\[(?P<options>[^\[\]]*)\])?$")

EXTRACTOR_KINDS: dict[str, _Kind] = {
    "sentence": _Kind(
        "refcheck_callbacks.extract.sentences",
        "SentenceExtractor",
        None,
        "the answer's sentences and clauses (default; offline, no model)",
    ),
    "llm": _Kind(
        "refcheck_callbacks.extract.triplets",
        "LLMExtractor",
        "model",
        "llm:MODEL, claim-triplets extracted by an LLM through litellm",
        serves_api=True,
    ),
    "remote": _Kind(
        "refcheck_callbacks.extract.remote",
        "RemoteExtractor",
        "url",
        "remote:URL, the extractor of a `refcheck serve --extractor ...` service",
    ),
}

# The offline pair is one product to users: `--extractor embedded` means the offline extractor.
EXTRACTOR_ALIASES = {"embedded": "sentence"}

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


def describe(kinds: dict[str, _Kind]) -> str:
    """One help line per kind, for `--help`."""
    lines = [f"  {name:<11} {kind.help}" for name, kind in kinds.items()]
    if kinds is CHECKER_KINDS:
        lines.append(f"  {'cascade':<11} {CASCADE_HELP}")
    lines.append(f"  {'py:MOD:OBJ':<11} your own: a class or factory, called without arguments")
    return "\n".join(lines)


def _load(module: str, attribute: str, spec: str) -> Callable[..., Any]:
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module.startswith(exc.name):
            raise ComponentSpecError(
                f"{spec!r}: module {module!r} is not available in this installation"
            ) from exc
        raise ComponentSpecError(
            f"{spec!r}: module {module!r} needs {exc.name!r}, which is not installed"
        ) from exc
    except ImportError as exc:
        raise ComponentSpecError(f"{spec!r}: {exc}") from exc
    try:
        factory = getattr(loaded, attribute)
    except AttributeError as exc:
        raise ComponentSpecError(f"{spec!r}: {module!r} has no {attribute!r}") from exc
    if not callable(factory):
        raise ComponentSpecError(f"{spec!r}: {module}.{attribute} is not callable")
    return factory


def _call(factory: Callable[..., Any], spec: str, **kwargs: str) -> Any:
    """The built component; a constructor that fails (a model that cannot load) is a spec error."""
    try:
        return factory(**kwargs)
    except MissingExtraError:
        raise  # its message already says what to install
    except RefCheckError as exc:  # written for the user: no need of the class name
        raise ComponentSpecError(f"{spec!r} could not be built: {exc}") from exc
    except Exception as exc:
        raise ComponentSpecError(f"{spec!r} could not be built: {exc!r}") from exc


def _build(spec: str, kinds: dict[str, _Kind], what: str, api_base: str | None) -> Any:
    kind_name, _, argument = spec.partition(":")
    if kind_name == "py":
        module, _, attribute = argument.rpartition(":")
        if not module or not attribute:
            raise ComponentSpecError(f"{spec!r}: write py:package.module:Factory")
        if api_base is not None:
            raise ComponentSpecError(f"{spec!r}: an API base is only for llm:MODEL specs")
        return _call(_load(module, attribute, spec), spec)
    kind = kinds.get(kind_name)
    if kind is None:
        known = ", ".join([*kinds, "py"])
        raise ComponentSpecError(f"unknown {what} {kind_name!r} in {spec!r}; known: {known}")
    if kind.argument is None and argument:
        raise ComponentSpecError(f"{spec!r}: the {kind_name!r} {what} takes no argument")
    if kind.argument is not None and not argument:
        raise ComponentSpecError(f"{spec!r}: write {kind_name}:{kind.argument.upper()}")
    if api_base is not None and not kind.serves_api:
        raise ComponentSpecError(f"{spec!r}: an API base is only for llm:MODEL specs")
    kwargs: dict[str, Any] = {}
    variant, _, rest = argument.partition("@")
    if kind.variant is not None and rest and not re.search(r"[/:\\]", variant):
        kwargs[kind.variant], argument = variant, rest
    if kind.argument is not None:
        kwargs[kind.argument] = argument
    if api_base is not None:
        kwargs["api_base"] = api_base
    return _call(_load(kind.module, kind.attribute, spec), spec, **kwargs)


def _cascade(spec: str, api_base: str | None) -> Checker:
    from refcheck_callbacks.check.cascade import CascadeChecker, CascadeStage, Certainty
    from refcheck_callbacks.types import Label

    stages = []
    for text in spec.removeprefix("cascade:").split(">"):
        match = _STAGE.match(text.strip())
        if match is None or match["spec"].startswith("cascade"):
            raise ComponentSpecError(f"{spec!r}: {text!r} is not a stage spec")
        options = [o.strip() for o in (match["options"] or "").split(",") if o.strip()]
        numbers = [o for o in options if re.fullmatch(r"[0-9.]+", o)]
        by: Certainty = "margin" if "margin" in options else "confidence"
        labels = [o.lower() for o in options if o not in numbers and o != "margin"]
        unknown = sorted(set(labels) - {label.value for label in Label})
        if len(numbers) > 1 or unknown:
            raise ComponentSpecError(
                f"{spec!r}: stage options are one threshold, `margin` and labels "
                f"(entailment, neutral, contradiction), got {match['options']!r}"
            )
        kind = CHECKER_KINDS.get(match["spec"].partition(":")[0])
        serves_api = kind is not None and kind.serves_api
        checker = build_checker(match["spec"], api_base if serves_api else None)
        try:
            stage = CascadeStage(
                checker,
                threshold=float(numbers[0]) if numbers else 0.0,
                escalate=frozenset(Label(label) for label in labels),
                by=by,
            )
        except ValueError as exc:
            raise ComponentSpecError(f"{spec!r}: {exc}") from exc
        stages.append(stage)
    try:
        return CascadeChecker(stages)
    except ValueError as exc:
        raise ComponentSpecError(f"{spec!r}: {exc}") from exc


def build_checker(spec: str, api_base: str | None = None) -> Checker:
    """The checker a spec names; `ComponentSpecError` says why when it cannot be built."""
    spec = spec.strip()
    if spec.startswith("cascade:"):
        return _cascade(spec, api_base)
    checker = _build(spec, CHECKER_KINDS, "checker", api_base)
    try:
        return implementing(checker, Checker, "checker")
    except ProtocolError as exc:
        raise ComponentSpecError(f"{spec!r}: {exc}") from exc


def build_extractor(spec: str, api_base: str | None = None) -> Extractor:
    """The extractor a spec names; `ComponentSpecError` says why when it cannot be built."""
    spec = spec.strip()
    extractor = _build(EXTRACTOR_ALIASES.get(spec, spec), EXTRACTOR_KINDS, "extractor", api_base)
    try:
        return implementing(extractor, Extractor, "extractor")
    except ProtocolError as exc:
        raise ComponentSpecError(f"{spec!r}: {exc}") from exc
