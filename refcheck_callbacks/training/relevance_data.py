"""Question-passage relevance pairs from the data directory, read as they are.

- WikiQA (`wikiqa/{train,dev}`): `a.toks` question, `b.toks` candidate sentence of its
  Wikipedia page, `sim.txt` 1 when the sentence answers it, `id.txt` the question id.
- TREC QA (`trecqa/{TRAIN,DEV}.xml`): each `<QApairs>` holds a `<question>` and `<positive>` /
  `<negative>` sentences; the first line of each block is its tab-separated tokens.

The negatives of both are sentences on the question's topic that do not answer it: the
"topical passages without the answer" of RGB, which is what the relevance head must tell apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from refcheck_callbacks.bench.data_dir import data_dir

SPLITS = {"wikiqa": ("train", "dev"), "trecqa": ("TRAIN", "DEV")}


@dataclass(frozen=True, slots=True)
class RelevancePair:
    dataset: str
    split: str
    question_id: str
    question: str
    passage: str
    relevant: bool


def _wikiqa(root: Path, split: str) -> Iterator[RelevancePair]:
    folder = root / "wikiqa" / split
    columns = [
        (folder / name).read_text(encoding="utf-8").splitlines()
        for name in ("id.txt", "a.toks", "b.toks", "sim.txt")
    ]
    for qid, question, passage, label in zip(*columns, strict=True):
        yield RelevancePair("wikiqa", split, f"wikiqa:{qid}", question, passage, label == "1")


_BLOCK = re.compile(
    r"<QApairs id='([^']*)'>|<(question|positive|negative)>\n([^\n]*)", re.MULTILINE
)


def _trecqa(root: Path, split: str) -> Iterator[RelevancePair]:
    text = (root / "trecqa" / f"{split}.xml").read_text(encoding="utf-8")
    qid, question = "", ""
    for match in _BLOCK.finditer(text):
        if match.group(1) is not None:
            qid = match.group(1)
            continue
        kind, line = match.group(2), " ".join(match.group(3).split("\t"))
        if kind == "question":
            question = line
        else:
            yield RelevancePair(
                "trecqa", split, f"trecqa:{qid}", question, line, kind == "positive"
            )


def load_pairs(dataset: str, split: str, root: Path | None = None) -> list[RelevancePair]:
    """The pairs of one split of `wikiqa` or `trecqa`."""
    base = root or data_dir()
    reader = _wikiqa if dataset == "wikiqa" else _trecqa
    return list(reader(base, split))


@dataclass(frozen=True, slots=True)
class ClaimRelevance:
    """One ExpertQA claim with the expert's judgement of its relevance to the question."""

    question_id: str
    question: str
    answer: str
    claim: str
    relevant: bool
    """`informativeness` is "Very relevant" or "A bit relevant" (not "Not too important" or
    "Uninformative")."""


RELEVANT_INFORMATIVENESS = frozenset({"Very relevant", "A bit relevant"})


def load_claim_relevance(root: Path | None = None) -> list[ClaimRelevance]:
    """ExpertQA's `rand_val` claims with an `informativeness` judgement, each with its
    question and the whole answer it belongs to (one question id per question and system)."""
    import json

    path = (root or data_dir()) / "expertqa" / "rand_val.jsonl"
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if not line.strip():
            continue
        item = json.loads(line)
        for system, answer in item["answers"].items():
            for claim in answer.get("claims") or []:
                judged = claim.get("informativeness")
                if not judged or not claim.get("claim_string"):
                    continue
                out.append(
                    ClaimRelevance(
                        question_id=f"expertqa:{number}:{system}",
                        question=item["question"],
                        answer=answer.get("answer_string") or "",
                        claim=claim["claim_string"],
                        relevant=judged in RELEVANT_INFORMATIVENESS,
                    )
                )
    return out
