"""The demo's LangChain route runs offline: a real RAG chain, the scripted fake model, our
handler."""

from __future__ import annotations

import pytest

from refcheck_callbacks import CheckResult
from refcheck_callbacks.demo import langchain_rag
from refcheck_callbacks.demo.examples import load_examples


def test_quickstart_chain_checks_every_scripted_answer_with_its_retrieved_documents(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    results: list[CheckResult] = []
    langchain_rag.run(results.append)

    out = capsys.readouterr().out
    assert "FakeListChatModel replaying scripted answers" in out
    assert "Not checked: nothing" in out
    examples = load_examples()
    assert [r.request.question for r in results] == [e["question"] for e in examples]
    for result, example in zip(results, examples, strict=True):
        assert result.request.answer == example["answer"]
        retrieved = {reference.id for reference in result.request.references}
        assert len(retrieved) == 3
        # The vector store finds each question's own documents among all examples' documents.
        assert example["references"][0]["id"] in retrieved
