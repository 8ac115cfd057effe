"""A scripted LlamaIndex LLM for app tests: LlamaIndex's own `CustomLLM` base (chat, async and
streaming come from it), replying by what the prompt asks, as a grader, a query rewriter and
an answering model of one workflow would."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback


class PromptedLLM(CustomLLM):
    """Replies with the reply of the first rule whose marker the prompt holds, else
    `default`. `rules` are (marker, reply) pairs; a reply may be a list, taken in turn
    (the last one repeats)."""

    rules: Sequence[tuple[str, str | list[str]]] = ()
    default: str = ""
    prompts: list[str] = []  # noqa: RUF012 (a pydantic field: each instance gets a copy)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="prompted")

    def reply(self, prompt: str) -> str:
        self.prompts.append(prompt)
        for marker, reply in self.rules:
            if marker in prompt:
                if isinstance(reply, list):
                    return reply.pop(0) if len(reply) > 1 else reply[0]
                return reply
        return self.default

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.reply(prompt))

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> Iterator[CompletionResponse]:
        text = self.reply(prompt)
        yield CompletionResponse(text=text, delta=text)
