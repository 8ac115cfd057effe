"""Redaction before anything leaves: the user's hook over every text of a request, failing
closed.

A request whose hook raises is withheld: its text is dropped, even from the result, and nothing
of it is checked, sent to a judge or exported. Used by the pipeline, and by a monitor whose
pipeline runs in a child process (it redacts before sending).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass

from refcheck_callbacks.errors import RedactionError
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import CheckRequest

Redactor = Callable[[str], str]


def redact_request(request: CheckRequest, redact: Redactor) -> CheckRequest:
    """The request with the user's redaction applied to every text we might send or export."""
    return request.model_copy(
        update={
            "answer": redact(request.answer),
            "question": None if request.question is None else redact(request.question),
            "references": tuple(
                ref.model_copy(update={"text": redact(ref.text)}) for ref in request.references
            ),
            "claims": None
            if request.claims is None
            else tuple(c.model_copy(update={"text": redact(c.text)}) for c in request.claims),
        }
    )


def withheld_request(request: CheckRequest, exc: BaseException) -> CheckRequest:
    """The request without any of its text, for when the redact hook failed: the result must
    not carry what could not be redacted. The note names the hook's exception class only
    (its message may quote the text)."""
    note = (
        f"redaction failed ({type(exc).__name__}): the question, answer, references and claims "
        "were withheld"
    )
    return request.model_copy(
        update={
            "answer": "",
            "question": None,
            "references": (),
            "claims": None,
            "notes": (*request.notes, note),
        }
    )


@dataclass(frozen=True)
class Withheld:
    """A request whose redact hook raised, without its text: it ends here, with this error."""

    request: CheckRequest
    message: str
    error_type: str = RedactionError.__name__


def redacted(request: CheckRequest, redact: Redactor) -> CheckRequest | Withheld:
    """The request redacted; `Withheld` when the hook raised (fail closed: the unredacted text
    goes no further, not even into the result). Shared by the pipeline and by a monitor whose
    pipeline runs in a child process (which redacts before sending)."""
    try:
        return redact_request(request, redact)
    except BaseException as exc:
        withheld = withheld_request(request, exc)
        logger.warning(
            "refcheck: the redact hook raised %s; request %s withheld. Hook frames:\n%s",
            type(exc).__name__,
            request.request_id,
            "".join(traceback.format_tb(exc.__traceback__)),
        )
        message = (
            f"the redact hook raised {type(exc).__name__}: the request was withheld "
            "(not checked, sent to a judge or exported)"
        )
        return Withheld(withheld, message)
