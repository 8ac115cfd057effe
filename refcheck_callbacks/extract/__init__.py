"""Claim extractors: offline sentence claims; LLM claim-triplets."""

from refcheck_callbacks.extract.base import Extraction, Extractor, SyncExtractor
from refcheck_callbacks.extract.llm import LLMExtractor
from refcheck_callbacks.extract.sentences import SentenceExtractor

__all__ = ["Extraction", "Extractor", "LLMExtractor", "SentenceExtractor", "SyncExtractor"]
