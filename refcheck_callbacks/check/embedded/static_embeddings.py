"""Static token vectors distilled from the bundled MiniLM: sentence embeddings at numpy speed.

Running MiniLM's six transformer layers over every reference sentence costs about 20 MFLOP
per token; on a shared 2-core machine that is 1-6 thousand tokens a second, far from the
100 claims a second the embedded checker must reach (an answer of four claims brings ~750
words of references). Following Model2Vec, we run MiniLM once per vocabulary token, keep the
pooled output as that token's vector and reduce it with PCA; then, following Tokenlearn, the
training script fits the table so that a text's static vector comes close (in cosine) to the
full MiniLM's embedding of the same text, over the claims and reference segments of the
training data (no labels), and stores it as int8. A text is the weighted mean of its tokens'
unit vectors (rare tokens weigh more, SIF-style), and a claim's tokens can be aligned with the
evidence's tokens (a static BERTScore). Tokenising with the Rust `tokenizers` library and a
numpy gather replace the transformer at inference time.

Norms, means and dot products run in float64 on the float32 table (products of float32 values
are exact in float64), and the features are rounded to float32 once, at the end. In float32,
BLAS picks its kernel by CPU at run time and each kernel sums in its own order: a token's
cosine with itself came out 0.99999988 with OpenBLAS's Haswell kernel and 1.0 with its
SkylakeX kernel, and a boosted tree of the shipped model splits exactly between the two, so
the same claim got P(entailment) 0.897 on one CPU and 0.906 on another. In float64 the kernels
differ by ~1e-16, far below float32's resolution, so every CPU rounds to the same features.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from refcheck_callbacks.support.extras import require

SIF_SMOOTHING = 1e-3
"""`a` in the SIF weight a / (a + p(token)): tokens rarer than this keep nearly full weight."""


def load_tokenizer(model_dir: Path) -> Any:
    """The bundled MiniLM's WordPiece tokenizer, without special tokens, padding or truncation."""
    tokenizers = require("tokenizers", "embedded")
    tokenizer = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


class StaticEmbeddings:
    """Unit-length token vectors plus a weight per token; texts become weighted means."""

    def __init__(self, vectors: Any, weights: Any, tokenizer: Any) -> None:
        np = require("numpy", "embedded")
        exact = np.asarray(vectors, dtype=np.float64)
        norms = np.linalg.norm(exact, axis=1, keepdims=True)
        self.vectors = (exact / np.maximum(norms, 1e-9)).astype(np.float32)
        """Unit rows, stored in float32; `exact_vectors` widens the rows a product needs."""
        self.weights = weights.astype(np.float32)
        self.tokenizer = tokenizer
        self.dimension = int(vectors.shape[1])
        if tokenizer.get_vocab_size() != vectors.shape[0]:
            raise ValueError(
                f"the tokenizer has {tokenizer.get_vocab_size()} tokens but the table "
                f"{vectors.shape[0]}: they come from different models"
            )

    @classmethod
    def from_arrays(cls, arrays: Any, tokenizer: Any) -> StaticEmbeddings:
        """From the int8 `token_vectors_q` with per-row `token_scales`, and `token_weights`."""
        np = require("numpy", "embedded")
        vectors = arrays["token_vectors_q"].astype(np.float32) * arrays["token_scales"][:, None]
        return cls(vectors, arrays["token_weights"], tokenizer)

    def token_ids(self, texts: Sequence[str]) -> list[Any]:
        """Token ids of each text (int32 arrays), special tokens left out."""
        np = require("numpy", "embedded")
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [np.asarray(encoding.ids, dtype=np.int32) for encoding in encodings]

    def exact_vectors(self, ids: Any) -> Any:
        """The unit vectors of `ids` in float64, for products every CPU computes alike."""
        np = require("numpy", "embedded")
        return self.vectors[ids].astype(np.float64)

    def embed(self, token_ids: Sequence[Any]) -> Any:
        """Unit-length weighted-mean vectors in float64, one row per id array (zeros for an
        empty one)."""
        return unit_rows(self.weighted_sums(token_ids))

    def weighted_sums(self, token_ids: Sequence[Any]) -> Any:
        """The weighted sums `embed` normalises: texts joined add up, so a text's vector
        without one of its parts is a subtraction, not a second pass."""
        np = require("numpy", "embedded")
        out = np.zeros((len(token_ids), self.dimension), dtype=np.float64)
        for row, ids in enumerate(token_ids):
            if len(ids):
                out[row] = self.weights[ids].astype(np.float64) @ self.exact_vectors(ids)
        return out


def unit_rows(rows: Any) -> Any:
    """Each row scaled to unit length (a zero row stays zero)."""
    np = require("numpy", "embedded")
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.maximum(norms, 1e-9)


def distil_token_vectors(encoder: Any, batch_size: int = 512) -> Any:
    """Each vocabulary token run alone through the encoder's MiniLM: a (vocab, hidden) array.

    Slow (one model call per 512 tokens); the training script runs it once and ships the
    result. `encoder` is a `SentenceEncoder`.
    """
    np = require("numpy", "embedded")
    torch = require("torch", "embedded")
    tokenizer = encoder.tokenizer
    vocab_size = int(tokenizer.vocab_size)
    out = np.zeros((vocab_size, encoder.dimension), dtype=np.float32)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    with torch.inference_mode():
        for start in range(0, vocab_size, batch_size):
            ids = torch.arange(start, min(start + batch_size, vocab_size))
            batch = torch.stack(
                [torch.full_like(ids, cls), ids, torch.full_like(ids, sep)], dim=1
            ).to(encoder.device)
            hidden = encoder.model(input_ids=batch).last_hidden_state
            out[start : start + len(ids)] = hidden.mean(dim=1).float().cpu().numpy()
    return out


def sif_weights(token_counts: Any) -> Any:
    """SIF weights from token counts in a corpus: frequent tokens (the, of, ##s) weigh little."""
    probabilities = (token_counts + 1.0) / (token_counts.sum() + len(token_counts))
    return SIF_SMOOTHING / (SIF_SMOOTHING + probabilities)
