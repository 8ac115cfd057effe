"""refcheck_callbacks: claim-level hallucination checks for RAG apps, exported as OpenTelemetry.

Importing this package is light: torch, transformers and litellm load only when a component
that needs them is built.
"""

from refcheck_callbacks.contract.answers import AnswerFields, AnswerSink, InputLimits
from refcheck_callbacks.contract.reasons import (
    DropReason,
    ErrorReason,
    FeedbackReason,
    SkipReason,
    Tally,
)
from refcheck_callbacks.contract.tracing import current_trace_context
from refcheck_callbacks.engine.aggregate import Aggregator
from refcheck_callbacks.engine.monitor import RefCheckMonitor
from refcheck_callbacks.engine.pipeline import StageTimeouts
from refcheck_callbacks.errors import (
    BadRecordError,
    CheckError,
    CheckingProcessError,
    ComponentSpecError,
    DatasetUnavailableError,
    ExtractionError,
    ExtractionReplyError,
    LabelSchemeError,
    LLMCallError,
    MissingExtraError,
    ModelNotFoundError,
    MonitorUnavailableError,
    PlacementError,
    PlacementWarning,
    ProtocolError,
    RedactionError,
    RefCheckError,
    SignalHandlerError,
    StageOutputError,
)
from refcheck_callbacks.llm.budget import JudgeBudget, TokenPrice
from refcheck_callbacks.types import (
    CharSpan,
    CheckItem,
    CheckRequest,
    CheckResult,
    Claim,
    ConflictKind,
    Evidence,
    Label,
    ModelSpend,
    Outcome,
    Placement,
    Ratios,
    Reference,
    ResponseLabel,
    StageVerdict,
    TraceContext,
    Triplet,
    Usage,
    Verdict,
)

__version__ = "0.1.0"

__all__ = [
    "Aggregator",
    "AnswerFields",
    "AnswerSink",
    "BadRecordError",
    "CharSpan",
    "CheckError",
    "CheckItem",
    "CheckRequest",
    "CheckResult",
    "CheckingProcessError",
    "Claim",
    "ComponentSpecError",
    "ConflictKind",
    "DatasetUnavailableError",
    "DropReason",
    "ErrorReason",
    "Evidence",
    "ExtractionError",
    "ExtractionReplyError",
    "FeedbackReason",
    "InputLimits",
    "JudgeBudget",
    "LLMCallError",
    "Label",
    "LabelSchemeError",
    "MissingExtraError",
    "ModelNotFoundError",
    "ModelSpend",
    "MonitorUnavailableError",
    "Outcome",
    "Placement",
    "PlacementError",
    "PlacementWarning",
    "ProtocolError",
    "Ratios",
    "RedactionError",
    "RefCheckError",
    "RefCheckMonitor",
    "Reference",
    "ResponseLabel",
    "SignalHandlerError",
    "SkipReason",
    "StageOutputError",
    "StageTimeouts",
    "StageVerdict",
    "Tally",
    "TokenPrice",
    "TraceContext",
    "Triplet",
    "Usage",
    "Verdict",
    "current_trace_context",
]
