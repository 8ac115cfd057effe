"""Checkers: offline embedded default; NLI models; LLM judges; cascades of them; a remote
checker service. Plus shared segmentation."""

from refcheck_callbacks.check.base import SyncChecker
from refcheck_callbacks.check.cascade import CascadeChecker, CascadeStage
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.check.judge.checker import LLMChecker
from refcheck_callbacks.check.nli.checker import NLIChecker
from refcheck_callbacks.check.remote import RemoteChecker
from refcheck_callbacks.contract.components import Checker
from refcheck_callbacks.remote.options import RemoteOptions

__all__ = [
    "CascadeChecker",
    "CascadeStage",
    "Checker",
    "EmbeddedChecker",
    "LLMChecker",
    "NLIChecker",
    "RemoteChecker",
    "RemoteOptions",
    "SyncChecker",
]
