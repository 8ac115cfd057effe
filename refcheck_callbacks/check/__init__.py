"""Checkers: offline embedded default; NLI models; LLM judges. Plus shared segmentation."""

from refcheck_callbacks.check.base import Checker, SyncChecker
from refcheck_callbacks.check.embedded import EmbeddedChecker
from refcheck_callbacks.check.llm import LLMChecker

__all__ = ["Checker", "EmbeddedChecker", "LLMChecker", "SyncChecker"]
