"""Claim extractors: offline sentence claims; LLM claim-triplets."""

from refcheck_callbacks.contract.components import Extraction, Extractor
from refcheck_callbacks.extract.base import SyncExtractor
from refcheck_callbacks.extract.sentences import SentenceExtractor
from refcheck_callbacks.extract.triplets import LLMExtractor

__all__ = ["Extraction", "Extractor", "LLMExtractor", "SentenceExtractor", "SyncExtractor"]
