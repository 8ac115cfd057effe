"""Text preparation around extraction: what the checker reads of each claim.

Before extraction the answer's formatting is blanked (`text.markup`): sentences split where a
reader sees them, and no citation marker, bullet number or `**` becomes part of a claim. The
extractor reads `Markup.plain`, which is as long as the answer, so every span it finds is a
span of the answer.

After extraction, and for claims the caller gave:
- each claim's text loses its markers (its span in the answer stays);
- an extracted claim led by a pronoun takes the subject of the claim before it
  (`text.subjects`); claims the caller gave are taken as they are, each on its own;
- a short answer, a phrase with no verb ("Delhi"), becomes the statement its question makes of
  it (`text.questions`) instead of abstaining for want of a claim.
"""

from __future__ import annotations

from collections.abc import Sequence

from refcheck_callbacks.text.markup import Markup, markup
from refcheck_callbacks.text.questions import claim_from_question, is_short_answer
from refcheck_callbacks.text.subjects import leading_pronoun, subject, with_subject
from refcheck_callbacks.types import CharSpan, CheckRequest, Claim


def for_extraction(request: CheckRequest, prepared: Markup) -> CheckRequest:
    """The request as the extractor reads it: the answer with its formatting blanked."""
    if prepared.plain == request.answer:
        return request
    return request.model_copy(update={"answer": prepared.plain})


def prepared_claims(
    request: CheckRequest, claims: Sequence[Claim], prepared: Markup | None = None
) -> list[Claim]:
    """The claims to check (see the module docstring). `prepared` is the answer's markup,
    when the claims were extracted from it."""
    if request.claims is not None or prepared is None:
        return [_cleaned(claim) for claim in claims]
    short = _short_answer(request, claims, prepared)
    if short is not None:
        return [short]
    return _resolved([_cleaned(claim, prepared) for claim in claims])


def _cleaned(claim: Claim, prepared: Markup | None = None) -> Claim:
    """The claim without citation markers and markdown; unchanged when it has none."""
    span = claim.span
    if prepared is not None and span is not None and _taken_from(prepared, span, claim.text):
        text = prepared.clean(span.start, span.end)
    else:
        text = markup(claim.text).clean()
    if not text or text == claim.text:
        return claim
    return claim.model_copy(update={"text": text})


def _taken_from(prepared: Markup, span: CharSpan, text: str) -> bool:
    """Whether the extractor took the claim's text verbatim from the answer it read."""
    return prepared.plain[span.start : span.end] == text


def _resolved(claims: list[Claim]) -> list[Claim]:
    """Claims led by a pronoun, with the subject of the claim before them in its place."""
    resolved: list[Claim] = []
    previous: str | None = None
    for claim in claims:
        text = claim.text
        pronoun = leading_pronoun(text)
        if pronoun is not None and previous is not None:
            text = with_subject(text, pronoun, previous)
            claim = claim.model_copy(update={"text": text})
        previous = subject(text)
        resolved.append(claim)
    return resolved


def _short_answer(request: CheckRequest, claims: Sequence[Claim], prepared: Markup) -> Claim | None:
    """The claim a short answer makes with its question; None for any other answer."""
    answer = prepared.clean()
    if not is_short_answer(answer, request.question) or request.question is None:
        return None
    if len(claims) > 1 or (claims and _words(claims[0].text) != _words(answer)):
        return None  # the extractor found a statement of its own
    plain = prepared.plain
    start = len(plain) - len(plain.lstrip())
    end = len(plain.rstrip())
    return Claim(
        text=claim_from_question(request.question, answer), span=CharSpan(start=start, end=end)
    )


def _words(text: str) -> list[str]:
    return [word.strip(".,;:!?").lower() for word in text.split()]
