"""RemoteExtractor against a real HTTP server on 127.0.0.1 that plays the service's part: a
reply it cannot trust (too large for its cap, claims outside the answers it sent) fails each
answer of the call with a counted `bad_reply`, never an exception."""

from __future__ import annotations

import asyncio

import pytest
from scripted_openai_server import Reply, ScriptedOpenAIServer

from refcheck_callbacks import CheckRequest
from refcheck_callbacks.extract.remote import RemoteExtractor
from refcheck_callbacks.remote.options import RemoteOptions

ANSWERS = [CheckRequest(answer="Paris is in France."), CheckRequest(answer="Rome is old.")]


def _extraction(span_end: int) -> bytes:
    claim = f'{{"text": "Paris is in France.", "span": {{"start": 0, "end": {span_end}}}}}'
    return f'{{"extractor": "scripted", "extractions": [{{"claims": [{claim}]}}, {{}}]}}'.encode()


@pytest.mark.parametrize(
    ("body", "max_reply_bytes", "words"),
    [
        (_extraction(19) + b" " * 20_000, 10_000, "reply larger than 10,000 bytes"),
        (_extraction(400), 10_000,
         "extractions[0] has a claim up to character 400; its answer has 19"),
    ],
    ids=["too-large", "span-outside-the-answer"],
)  # fmt: skip
def test_a_reply_it_cannot_trust_fails_every_answer_of_the_call(
    llm_server: ScriptedOpenAIServer, body: bytes, max_reply_bytes: int, words: str
) -> None:
    llm_server.respond(lambda received: Reply(raw=body))
    extractor = RemoteExtractor(llm_server.url, RemoteOptions(max_reply_bytes=max_reply_bytes))
    extractions = asyncio.run(extractor.extract(ANSWERS))
    assert len(extractions) == 2
    assert all("(bad_reply)" in (e.error or "") and words in (e.error or "") for e in extractions)
    assert extractor.stats()["failures"] == {"bad_reply": 1}


def test_a_reply_within_the_cap_and_the_answers_is_taken(llm_server: ScriptedOpenAIServer) -> None:
    llm_server.respond(lambda received: Reply(raw=_extraction(19)))
    extractions = asyncio.run(RemoteExtractor(llm_server.url).extract(ANSWERS))
    assert [len(e.claims) for e in extractions] == [1, 0]
    assert all(e.error is None for e in extractions)
