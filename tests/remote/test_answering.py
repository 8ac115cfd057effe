"""Answering merged calls without any transport: outputs back per caller, failures per request."""

from __future__ import annotations

import asyncio

from scripted_checkers import LazyChecker

from refcheck_callbacks import CheckItem, CheckRequest, Claim, Label, Reference
from refcheck_callbacks.check.cascade import CascadeChecker
from refcheck_callbacks.remote.answering import ComponentRunner, Role
from refcheck_callbacks.remote.wire import CheckCall, CheckReply, ExtractCall, ExtractReply


def _call(client: str, *claims: str) -> CheckCall:
    references = [Reference(text="paris is the capital of france")]
    items = [
        CheckItem(claim=Claim(text=text), references=references, request_id=f"{client}-{i}",
                  claim_index=0)
        for i, text in enumerate(claims)
    ]  # fmt: skip
    return CheckCall.of(items, client=client)


def test_two_callers_get_their_own_verdicts_and_a_poisoned_request_fails_alone() -> None:
    runner = ComponentRunner(Role.CHECKER, "py:poisoned_checker:PoisonedChecker")
    first = _call("a", "paris is the capital of france", "POISON here")
    second = _call("b", "france is big")
    replies, failed = asyncio.run(runner.answer([first, second]))
    assert failed == 1
    [a, b] = [r for r in replies if isinstance(r, CheckReply)]
    assert [v.label for v in a.verdicts] == [Label.ENTAILMENT, None]
    assert "choked on a poisoned claim" in (a.verdicts[1].error or "")
    assert [v.label for v in b.verdicts] == [Label.NEUTRAL]


def test_an_extractor_answers_each_caller_with_its_own_answers() -> None:
    runner = ComponentRunner(Role.EXTRACTOR, "sentence")
    calls = [
        ExtractCall.of([CheckRequest(answer="Paris is in France. Rome is in Italy.")], "a"),
        ExtractCall.of([CheckRequest(answer="Cats sleep a lot every day.")], "b"),
    ]
    replies, failed = asyncio.run(runner.answer(calls))
    assert failed == 0
    counts = [
        [len(e.claims) for e in r.extractions] for r in replies if isinstance(r, ExtractReply)
    ]
    assert counts == [[2], [1]]


def test_a_lazily_loading_checker_is_loaded_before_the_first_call() -> None:
    # A service replica builds its runner before it reports ready: the first caller's deadline
    # is not spent loading.
    runner = ComponentRunner(Role.CHECKER, "py:scripted_checkers:LazyChecker")
    checker = runner.work.component
    assert isinstance(checker, LazyChecker) and checker.loads == ["preload"]
    asyncio.run(runner.answer([_call("a", "paris is the capital of france")]))
    assert checker.loads == ["preload"]


def test_a_cascade_preloads_each_stage() -> None:
    stages = [LazyChecker(), LazyChecker()]
    CascadeChecker(stages).preload()
    assert [stage.loads for stage in stages] == [["preload"], ["preload"]]
