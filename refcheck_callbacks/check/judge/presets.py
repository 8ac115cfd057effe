"""LLM checkers fine-tuned for grounding, with the prompts and answers their authors publish.

Bespoke-MiniCheck-7B and Granite Guardian 3.3 are LLMs served by vLLM (reached through
litellm's `hosted_vllm/<served name>` like any vLLM model), but they are not general judges:
each was trained on one prompt and answers one word. Sending them the general judge prompt
would get answers they were never trained to give. A preset carries the published prompt,
reads the one-word answer strictly (anything else is an error on that claim, never a guess) and
reads P(supported) from the answer tokens' log-probabilities where the server returns them.

- Bespoke-MiniCheck-7B (Liyan06/MiniCheck: system and user prompt in `minicheck/utils.py`,
  scoring in `minicheck/inference.py`, `LLMCheck`): the document and the claim, one generated
  token; P(supported) is the probability mass of the top-5 first tokens that read "yes";
  supported above 0.5. Documents longer than the model's window (32,768 - 300 tokens) are cut
  into chunks and the best chunk decides; we count words, not the model's tokens, at 24,000
  words a chunk (about 32k tokens at 1.35 tokens a word).
- Granite Guardian 3.3 (ibm-granite/granite-guardian: `evaluation/models/granite_guardian_3_3.py`
  and `evaluation/benchmarks/groundedness_aggrefact.py`): the claim as the assistant turn, the
  references as the chat template's `documents`, `guardian_config={"criteria_id":
  "groundedness"}` and `think=False` as chat-template arguments; the answer is
  `<score> yes </score>` when the claim is NOT grounded. P(ungrounded) is the softmax of the
  yes / no probability mass over every generated position, as its evaluation code computes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from refcheck_callbacks.check.segments import Segment, segment_text
from refcheck_callbacks.llm.client import Message, TopLogprobs
from refcheck_callbacks.text.spans import count_words

_TOP_LOGPROBS = 5


@dataclass(frozen=True)
class Reading:
    """What one answer says: P(supported), or why it cannot be read."""

    support: float | None
    error: str | None = None
    kind: str | None = None
    """The failed call's `LLMCallError.kind` (`budget_exhausted`, `timeout`, ...)."""


@dataclass(frozen=True)
class Prompt:
    """One call's messages and request fields (vLLM chat-template arguments)."""

    messages: list[Message]
    extra: dict[str, Any]


@dataclass(frozen=True)
class JudgePreset:
    name: str
    """What users write: `LLMChecker(model, preset=name)`, `llm:name@MODEL`."""
    title: str
    max_tokens: int
    chunk_words: int
    """References longer than this (in words) are checked in chunks; the best chunk decides."""
    prompt: Callable[[str, Sequence[str]], Prompt]
    """(claim, the chunk's documents) -> the call."""
    read: Callable[[str, Sequence[TopLogprobs]], Reading]
    """(answer text, its log-probabilities per position) -> P(supported)."""

    @property
    def request(self) -> Mapping[str, Any]:
        """Fields every call of this preset sends: log-probabilities of the answer tokens."""
        return {"logprobs": True, "top_logprobs": _TOP_LOGPROBS}

    def chunks(self, references: Sequence[str]) -> list[list[Segment]]:
        """References grouped in order into chunks of at most `chunk_words` words; a reference
        longer than that is split at sentence boundaries."""
        pieces = [
            segment
            for index, text in enumerate(references)
            for segment in segment_text(text, index, max_tokens=self.chunk_words, overlap_tokens=0)
        ]
        chunks: list[list[Segment]] = []
        words = self.chunk_words
        for piece in pieces:
            size = count_words(piece.text)
            if not chunks or words + size > self.chunk_words:
                chunks.append([])
                words = 0
            chunks[-1].append(piece)
            words += size
        return chunks


def _mass(positions: Sequence[TopLogprobs], word: str) -> float:
    return sum(
        math.exp(logprob)
        for position in positions
        for token, logprob in position
        if token.strip().lower() == word
    )


MINICHECK_SYSTEM = (
    "Determine whether the provided claim is consistent with the corresponding document. "
    "Consistency in this context implies that all information presented in the claim is "
    "substantiated by the document. If not, it should be considered inconsistent. Please "
    'assess the claim\'s consistency with the document by responding with either "Yes" or "No".'
)
MINICHECK_USER = "Document: [DOCUMENT]\nClaim: [CLAIM]"


def _minicheck_prompt(claim: str, documents: Sequence[str]) -> Prompt:
    document = "\n\n".join(documents)
    user = MINICHECK_USER.replace("[DOCUMENT]", document).replace("[CLAIM]", claim)
    return Prompt(
        [{"role": "system", "content": MINICHECK_SYSTEM}, {"role": "user", "content": user}], {}
    )


def _minicheck_read(answer: str, positions: Sequence[TopLogprobs]) -> Reading:
    word = answer.strip().strip(".").lower()
    if word not in ("yes", "no"):
        return Reading(None, f"Bespoke-MiniCheck answered {answer[:80]!r}, not Yes or No")
    if positions:
        return Reading(min(1.0, _mass(positions[:1], "yes")))
    return Reading(1.0 if word == "yes" else 0.0)


_SCORE = re.compile(r"<score>\s*(.*?)\s*</score>", re.DOTALL | re.IGNORECASE)


def _guardian_prompt(claim: str, documents: Sequence[str]) -> Prompt:
    return Prompt(
        [{"role": "assistant", "content": claim}],
        {
            "documents": [{"doc_id": str(i), "text": text} for i, text in enumerate(documents)],
            "chat_template_kwargs": {
                "guardian_config": {"criteria_id": "groundedness"},
                "think": False,
            },
        },
    )


def _guardian_read(answer: str, positions: Sequence[TopLogprobs]) -> Reading:
    scores = _SCORE.findall(answer)
    word = scores[0].strip().lower() if scores else ""
    if word not in ("yes", "no"):
        return Reading(None, f"Granite Guardian gave no <score> yes / no </score>: {answer[:80]!r}")
    if positions:
        yes = _mass(positions, "yes") + 1e-50
        no = _mass(positions, "no") + 1e-50
        return Reading(no / (yes + no))
    return Reading(0.0 if word == "yes" else 1.0)


PRESETS: dict[str, JudgePreset] = {
    preset.name: preset
    for preset in (
        JudgePreset(
            "bespoke-minicheck", "Bespoke-MiniCheck-7B", 1, 24_000,
            _minicheck_prompt, _minicheck_read,
        ),
        JudgePreset(
            "granite-guardian", "Granite Guardian 3.3", 20, 24_000,
            _guardian_prompt, _guardian_read,
        ),
    )
}  # fmt: skip
