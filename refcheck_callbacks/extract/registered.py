"""The extractor kinds this package registers (pyproject.toml's `refcheck_callbacks.extractors`
entry points name these). Only data: reading it imports no extractor."""

from __future__ import annotations

from refcheck_callbacks.contract.registry import Kind

SENTENCE = Kind(
    "refcheck_callbacks.extract.sentences:SentenceExtractor",
    "the answer's sentences and clauses (default; offline, no model)",
)
EMBEDDED = Kind(
    "refcheck_callbacks.extract.sentences:SentenceExtractor",
    "the extractor of the offline pair with the embedded checker: the same as sentence",
)
LLM = Kind(
    "refcheck_callbacks.extract.triplets:LLMExtractor",
    "llm:MODEL, claim-triplets extracted by an LLM through litellm",
    argument="model",
    serves_api=True,
)
REMOTE = Kind(
    "refcheck_callbacks.extract.remote:RemoteExtractor",
    "remote:URL, the extractor of a `refcheck serve --extractor ...` service",
    argument="url",
)
