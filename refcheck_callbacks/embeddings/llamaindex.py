"""A LlamaIndex embedding model over the bundled MiniLM encoder: offline vector indexes.

LlamaIndex's default embedding calls OpenAI. `SentenceEncoderEmbedding` lets an index (and our tests
and examples) run with no network, reusing the `SentenceEncoder` the embedded checker
already loads, so the weights sit in memory once.
"""

from __future__ import annotations

import asyncio
from typing import Any

from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.support.extras import require

require("llama_index.core", "llamaindex")

from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402


class SentenceEncoderEmbedding(BaseEmbedding):
    """all-MiniLM-L6-v2 sentence embeddings (384 dimensions, unit length) for LlamaIndex.

    Pass an existing `SentenceEncoder` to share its weights and cache; by default one is
    loaded from the bundled model. The async methods encode in a worker thread, so an async
    app's event loop keeps serving other requests meanwhile.
    """

    _encoder: SentenceEncoder = PrivateAttr()

    def __init__(self, encoder: SentenceEncoder | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("model_name", "all-MiniLM-L6-v2")
        super().__init__(**kwargs)
        self._encoder = encoder or SentenceEncoder()

    @classmethod
    def class_name(cls) -> str:
        return "SentenceEncoderEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embeddings([query])[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = self._encoder.encode(texts).tolist()
        return vectors
