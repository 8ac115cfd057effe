"""The checker kinds this package registers (pyproject.toml's `refcheck_callbacks.checkers`
entry points name these): how each spec's argument reaches its class, and its help line. Only
data: reading it imports no checker."""

from __future__ import annotations

from refcheck_callbacks.contract.registry import Kind

EMBEDDED = Kind(
    "refcheck_callbacks.check.embedded.checker:EmbeddedChecker",
    "offline learned checker on static MiniLM vectors: CPU, no key, no download (default)",
)
NLI = Kind(
    "refcheck_callbacks.check.nli.checker:NLIChecker",
    "nli:MODEL or nli:FAMILY@MODEL, a grounding model by hub name or path: MiniCheck, HHEM, "
    "FactCG, AlignScore or any 2- / 3-way NLI classifier (the family is recognised from name "
    "and config; name it when it is not)",
    argument="model",
    variant="family",
)
LLM = Kind(
    "refcheck_callbacks.check.judge.checker:LLMChecker",
    "llm:MODEL or llm:PRESET@MODEL, an LLM judge through litellm (llm:gpt-4o-mini), or a "
    "checker LLM with its published prompt (bespoke-minicheck@hosted_vllm/NAME, "
    "granite-guardian@hosted_vllm/NAME)",
    argument="model",
    variant="preset",
    serves_api=True,
)
READER = Kind(
    "refcheck_callbacks.check.reader.checker:ReaderChecker",
    "reader or reader:PATH, the learned reader trained by scripts/train_reader.py (the wheel "
    "ships one): a MiniLM cross-encoder reading each claim with its best evidence segments "
    "(docs/reader.md)",
    argument="model",
    argument_optional=True,
)
REMOTE = Kind(
    "refcheck_callbacks.check.remote:RemoteChecker",
    "remote:URL, the checker of a `refcheck serve` service (token: $REFCHECK_SERVE_TOKEN)",
    argument="url",
)
CASCADE = Kind(
    "refcheck_callbacks.check.cascade:from_spec",
    "cascade:SPEC[T]>SPEC[margin,T,LABEL]>SPEC, stages from cheapest to dearest; a claim whose "
    "confidence (with margin: P(entailment)'s distance from the checker's decision point) is "
    "below T, or labelled LABEL, goes on to the next stage",
    argument="stages",
    serves_api=True,
)
