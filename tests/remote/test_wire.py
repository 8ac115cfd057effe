"""The wire format: engine batches as calls and back, references sent once, splits in order."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from refcheck_callbacks import CheckItem, CheckRequest, Claim, Reference, TraceContext
from refcheck_callbacks.remote.wire import CheckCall, ExtractCall


def _items() -> list[CheckItem]:
    """Claims of two requests, interleaved, as a user's own caller might pass them."""
    first = [Reference(text="Paris is the capital of France.", id="a", metadata={"k": object()})]
    second = [Reference(text="Cats sleep a lot.", score=0.5), Reference(text="Dogs bark.")]
    return [
        CheckItem(claim=Claim(text="Paris is in France."), references=first, request_id="r1",
                  question="Where is Paris?", claim_index=0),
        CheckItem(claim=Claim(text="Cats sleep."), references=second, request_id="r2",
                  claim_index=0),
        CheckItem(claim=Claim(text="Paris is big."), references=first, request_id="r1",
                  question="Where is Paris?", claim_index=1),
        CheckItem(claim=Claim(text="Dogs bark."), references=second, request_id="r2",
                  claim_index=1),
    ]  # fmt: skip


def _key(item: CheckItem) -> tuple[object, ...]:
    refs = tuple((r.text, r.id, r.score) for r in item.references)
    return item.claim.text, item.request_id, item.claim_index, item.question, refs


def test_a_call_sends_each_requests_references_once_and_rebuilds_the_items() -> None:
    items = _items()
    call = CheckCall.of(items, client="app-1")
    assert [r.request_id for r in call.requests] == ["r1", "r2"]
    assert len(call) == 4
    received = CheckCall.model_validate_json(call.model_dump_json())
    assert [_key(i) for i in received.items()] == [_key(i) for i in items]
    # The app's metadata never goes out (here it is not even serialisable).
    assert all(not r.metadata for group in received.requests for r in group.references)


def test_halves_keep_the_claims_in_order_with_the_references_each_needs() -> None:
    call = CheckCall.of(_items())
    halves = call.halves()
    assert halves is not None
    parts = [item for half in halves for item in half.items()]
    assert [_key(i) for i in parts] == [_key(i) for i in call.items()]
    assert [len(h.requests) for h in halves] == [2, 2]
    single = CheckCall.of(_items()[:1])
    assert single.halves() is None


def test_two_requests_that_share_an_id_but_not_references_stay_apart() -> None:
    items = _items()
    clash = items[1].model_copy(update={"request_id": "r1"})
    call = CheckCall.of([items[0], clash])
    assert len(call.requests) == 2
    assert [_key(i)[4] for i in call.items()] == [_key(items[0])[4], _key(clash)[4]]


def test_a_claim_naming_a_missing_request_is_refused_with_the_reason() -> None:
    body = '{"requests": [], "claims": [{"claim": {"text": "x"}, "request": 2, "claim_index": 0}]}'
    with pytest.raises(ValidationError, match="names request 2, but the call holds 0"):
        CheckCall.model_validate_json(body)
    with pytest.raises(ValidationError, match="Extra inputs"):
        CheckCall.model_validate_json('{"requests": [], "claims": [], "surprise": 1}')


def test_an_extract_call_carries_answers_not_references_metadata_or_trace() -> None:
    request = CheckRequest(
        answer="Paris is in France.",
        question="Where?",
        references=[Reference(text="secret document")],
        metadata={"user": "u-1"},
        trace_context=TraceContext(trace_id="0" * 31 + "1", span_id="0" * 15 + "1"),
    )
    sent = ExtractCall.model_validate_json(ExtractCall.of([request]).model_dump_json())
    [copy] = sent.requests
    assert (copy.answer, copy.question, copy.request_id) == ("Paris is in France.", "Where?",
                                                             request.request_id)  # fmt: skip
    assert (copy.references, copy.metadata, copy.trace_context) == ((), {}, None)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"requests": [{"request_id": "r", "references": [{"text": "t", "score": NaN}]}]}',
         "requests.0.references.0.score is nan; numbers must be finite"),
        ('{"requests": [{"request_id": "r", "references": [{"text": "t", "score": -1e999}]}]}',
         "requests.0.references.0.score is -inf"),
        ('{"requests": [{"request_id": "r"}], "claims": [{"claim": {"text": "x"}, "request": 0,'
         ' "claim_index": 1e26}]}', "claims.0.claim_index"),
        ('{"requests": [{"request_id": "r"}], "claims": [{"claim": {"text": "x"}, "request": 0,'
         ' "claim_index": 4294967296}]}', "less than or equal to 2147483647"),
    ],
    ids=["nan", "overflow", "1e26", "past-int32"],
)  # fmt: skip
def test_a_call_with_a_non_finite_number_or_an_impossible_claim_index_is_refused(
    body: str, words: str
) -> None:
    with pytest.raises(ValidationError, match=re.escape(words)):
        CheckCall.model_validate_json(body)


def test_an_apps_own_nan_score_is_sent_as_null_not_refused() -> None:
    item = _items()[0]
    nan_score = [Reference(text="Paris is in France.", score=float("nan"))]
    call = CheckCall.of([item.model_copy(update={"references": nan_score})])
    received = CheckCall.model_validate_json(call.model_dump_json())
    assert received.requests[0].references[0].score is None


def test_an_extract_call_with_an_infinite_time_is_refused() -> None:
    body = '{"requests": [{"answer": "a", "submitted_at": Infinity}]}'
    with pytest.raises(ValidationError, match=re.escape("requests.0.submitted_at is inf")):
        ExtractCall.model_validate_json(body)


def _claims_of(*counts: int) -> list[CheckItem]:
    """Requests holding `counts` claims each, in order."""
    return [
        CheckItem(claim=Claim(text=f"claim {r}.{c}"), references=[Reference(text=f"doc {r}")],
                  request_id=f"r{r}", claim_index=c)
        for r, count in enumerate(counts)
        for c in range(count)
    ]  # fmt: skip


def test_parts_pack_whole_requests_and_cut_only_a_request_larger_than_a_call() -> None:
    items = _claims_of(3, 1, 3, 10)
    parts = CheckCall.of(items).parts(4)
    shapes = [[(r.request_id, len(r.references)) for r in part.requests] for part in parts]
    assert [len(part) for part in parts] == [4, 3, 4, 4, 2]
    assert shapes == [[("r0", 1), ("r1", 1)], [("r2", 1)], [("r3", 1)], [("r3", 1)], [("r3", 1)]]
    assert [_key(i) for part in parts for i in part.items()] == [_key(i) for i in items]
    assert [len(p) for p in ExtractCall.of([CheckRequest(answer="a")] * 5).parts(2)] == [2, 2, 1]
