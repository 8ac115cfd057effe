"""The relevance head: standardised features, a tiny MLP (or a logistic regression: no hidden
layer), a sigmoid. Its parameters are a few KB of JSON (`head.json`) written by
`refcheck_callbacks.training.relevance_training`; inference is numpy only.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HEAD_PATH = Path(__file__).with_name("head.json")


@dataclass(frozen=True)
class RelevanceHead:
    feature_names: tuple[str, ...]
    mean: Any
    scale: Any
    weights: list[Any]
    biases: list[Any]
    threshold: float
    """The relevance from which a passage counts as relevant (the cause rule's cut), chosen
    on the training data for balanced accuracy. Loaded heads have it folded into the output
    bias (`centred`), so that the cut is 1/2 for every reader: the cause rule, the exported
    `relevant` / `not_relevant` label and the alert's `le="0.5"` bucket."""
    claim_slope: float = 0.0
    claim_intercept: float = 0.0
    """A claim's relevance is a logistic of its static cosine to the question read with the
    rest of its answer (`features.claim_context_cosines`), fitted with classes balanced on
    ExpertQA's expert judgements, so that 1/2 is its balanced cut too."""

    def claim_probability(self, cosines: Any) -> Any:
        logit = self.claim_slope * np.asarray(cosines, dtype=np.float64) + self.claim_intercept
        return 1.0 / (1.0 + np.exp(-np.clip(logit, -40.0, 40.0)))

    def probability(self, features: Any) -> Any:
        hidden = (np.asarray(features, dtype=np.float64) - self.mean) / self.scale
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            hidden = hidden @ weight + bias
            if index < len(self.weights) - 1:
                hidden = np.maximum(hidden, 0.0)
        return 1.0 / (1.0 + np.exp(-np.clip(hidden[:, 0], -40.0, 40.0)))

    def to_json(self, **metadata: Any) -> dict[str, Any]:
        return {
            "feature_names": list(self.feature_names),
            "mean": np.round(self.mean, 6).tolist(),
            "scale": np.round(self.scale, 6).tolist(),
            "weights": [np.round(w, 6).tolist() for w in self.weights],
            "biases": [np.round(b, 6).tolist() for b in self.biases],
            "threshold": round(float(self.threshold), 6),
            "claim_slope": round(float(self.claim_slope), 6),
            "claim_intercept": round(float(self.claim_intercept), 6),
            **metadata,
        }

    def centred(self) -> RelevanceHead:
        """The same ranking with the cut moved to 1/2: the output's logit shifted by the
        threshold's, which changes no order (MAP and AUROC stay) and no decision."""
        if self.threshold == 0.5:
            return self
        shift = float(np.log(self.threshold / (1.0 - self.threshold)))
        biases = [*self.biases[:-1], np.asarray(self.biases[-1]) - shift]
        return dataclasses.replace(self, biases=biases, threshold=0.5)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RelevanceHead:
        return cls(
            feature_names=tuple(data["feature_names"]),
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            weights=[np.asarray(w, dtype=np.float64) for w in data["weights"]],
            biases=[np.asarray(b, dtype=np.float64) for b in data["biases"]],
            threshold=float(data["threshold"]),
            claim_slope=float(data.get("claim_slope", 0.0)),
            claim_intercept=float(data.get("claim_intercept", 0.0)),
        )


def load_head(path: Path = HEAD_PATH) -> RelevanceHead:
    """The head as the pipeline uses it: its cut at 1/2 (`centred`)."""
    return RelevanceHead.from_json(json.loads(path.read_text(encoding="utf-8"))).centred()
