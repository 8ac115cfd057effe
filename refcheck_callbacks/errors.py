"""Every exception refcheck_callbacks raises, under one base: `RefCheckError`.

Catch `RefCheckError` to handle anything of ours. Each class also derives from the builtin a
caller would expect (`ImportError` for a missing extra, `ValueError` for bad input), so code
written against those keeps working. None of these reaches the host app from the callback path:
there, failures become counted outcomes; they are raised only where the app calls us directly
(constructors, the CLI, `check()` misuse).
"""

from __future__ import annotations

from refcheck_callbacks.types import Usage


class RefCheckError(Exception):
    """The base of every refcheck_callbacks exception."""


class MissingExtraError(RefCheckError, ImportError):
    """An optional dependency is not installed; the message says which extra brings it."""


class ProtocolError(RefCheckError, TypeError):
    """A component given to the monitor does not implement its protocol (`Checker`,
    `Extractor`); the message names what is missing."""


class ComponentSpecError(RefCheckError, ValueError):
    """A component spec names no known component, or its implementation cannot be loaded."""


class LabelSchemeError(RefCheckError, ValueError):
    """A model's class names map to no known NLI or support scheme."""


class ModelNotFoundError(RefCheckError, FileNotFoundError):
    """A model named by a local path (absolute, `./`, `../`, `~`, or under a folder that
    exists) is not there: said as such, not as the hub's complaint about the name."""


class DatasetUnavailableError(RefCheckError, ValueError):
    """A labelled set is unknown, absent, or cannot be used for checking; the message says why."""


class DataDownloadError(RefCheckError, OSError):
    """A labelled set's file could not be fetched, or its bytes are not the pinned ones; the
    message names the URL."""


class BadRecordError(RefCheckError, ValueError):
    """An input record that cannot be read; the CLI reports it with its index and skips it."""


class ExtractionReplyError(RefCheckError, ValueError):
    """An extractor LLM's reply is neither claims nor the no-claims marker."""


class StageOutputError(RefCheckError, ValueError):
    """An extractor or checker broke its protocol: not one output per input, in order."""


class ExtractionError(RefCheckError):
    """Claim extraction failed for a request (the extractor reported it, without a kind)."""


class CheckError(RefCheckError):
    """No claim of a request got a verdict: every check of it failed."""


class RedactionError(RefCheckError):
    """The redact hook raised on a request: it was withheld (its text dropped from the result,
    nothing of it checked, sent to a judge or exported). The `error_type` of such a result."""


class MonitorUnavailableError(RefCheckError):
    """`check()` was called on a shut-down monitor, or from inside a result hook."""


class SignalHandlerError(RefCheckError, ValueError):
    """`install_signal_handlers` was called from a thread other than the main thread (only
    the main thread may set signal handlers)."""


class LLMCallError(RefCheckError):
    """An LLM call that failed for good: retries spent, deadline passed, or a client error.

    `kind` is `rate_limit`, `server_error`, `timeout`, `deadline`, `connection`,
    `client_error` or `budget_exhausted` (the judge budget refused the call: nothing was sent);
    `usage` holds the requests sent (and any tokens billed) before giving up.
    """

    def __init__(self, message: str, kind: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.usage = usage or Usage()


class BudgetError(RefCheckError, ValueError):
    """A judge budget that cannot be held: a USD limit on a model with no known price (give
    its price, or say `unlimited`)."""


class RemoteCallError(RefCheckError):
    """A call to a refcheck service (`RemoteChecker`, `RemoteExtractor`) that failed for good.

    `kind`: `too_large` (over the client's cap, or the service answered 413), `connection`,
    `deadline`, `rate_limit` / `unavailable` (retries spent), `rejected` (a 4xx: the service says
    the call is wrong), `server_error`, or `bad_reply` (the reply is not what the protocol
    promises). A deadline reached after failed tries keeps their kind, the deadline named in the
    message. The remote components turn it into per-claim or per-request errors; it never
    reaches the app.
    """

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class PlacementError(RefCheckError, ValueError):
    """The monitor cannot run where it was asked to: a built component (or an unpicklable
    factory) given for `placement="process"`, whose child process builds its own; or, as the
    `error_type` of its results, an app whose main module builds the monitor without the
    `if __name__ == "__main__":` guard that a spawned child process needs."""


class CheckingProcessError(RefCheckError):
    """The checking process of a `placement="process"` monitor ended (crashed, was killed, or
    hung and was stopped) while it held this request; another one was started. The
    `error_type` of such a result; its message says how the process ended."""


class CalibrationError(RefCheckError, ValueError):
    """A calibration file (`refcheck calibrate`) cannot be read, or its content is not a
    calibration; the message names the file and what is wrong."""


class CalibrationMismatchError(CalibrationError):
    """A calibration was fitted for another checker (or conflict stage) than the one it is
    applied to: its decision points mean nothing there, so it is refused, naming both."""


class ConfigurationError(RefCheckError, ValueError):
    """An environment variable refcheck reads (`environment_variables`), or a setting such as
    `relevance=`, holds a value it cannot use: raised where the monitor (or pipeline) is built,
    the message naming the variable or setting and what it accepts."""


class ServiceStartError(RefCheckError, RuntimeError):
    """`refcheck serve` could not deploy its application, or it did not become ready."""


class PromtoolError(RefCheckError, RuntimeError):
    """The alert simulator could not run `promtool test rules`: missing, not 2.x, or a rule
    evaluation error; or promtool and the simulator's replay disagree on the same series."""


class PlacementWarning(UserWarning):
    """A monitor left at the default placement checks in the app's thread, not in a child
    process, because no child can start for it (components built in the app, a factory the
    child cannot import, a main module without its guard, a process that cannot spawn). The
    message says why and how to choose; `placement="thread"` chooses the thread silently."""


__all__ = [
    "BadRecordError",
    "BudgetError",
    "CalibrationError",
    "CalibrationMismatchError",
    "CheckError",
    "CheckingProcessError",
    "ComponentSpecError",
    "ConfigurationError",
    "DataDownloadError",
    "DatasetUnavailableError",
    "ExtractionError",
    "ExtractionReplyError",
    "LLMCallError",
    "LabelSchemeError",
    "MissingExtraError",
    "ModelNotFoundError",
    "MonitorUnavailableError",
    "PlacementError",
    "PlacementWarning",
    "PromtoolError",
    "ProtocolError",
    "RedactionError",
    "RefCheckError",
    "RemoteCallError",
    "ServiceStartError",
    "SignalHandlerError",
    "StageOutputError",
]
