"""Documents that overlap, decided by the share of a document's text found elsewhere.

The references are the texts the answering model saw. A captured document whose text lies
wholly inside another reference is the same evidence seen twice: `ParentDocumentRetriever`
searches its vector store for small child chunks and returns their parents, so the children
(captured from the search) all lie inside the parent the prompt shows. Checking against both
counts one piece of evidence several times; the one inside is left out, and counted
(`CONTAINED`, under `LEFT_OUT_KEY` in the request's metadata).

"Inside" is decided by the *share* of a document's text found in the other, never by a few
words: both are read as their canonical words (`prompt_match.canonical`: escapes decoded,
punctuation and layout dropped), cut into overlapping runs of `SHINGLE_WORDS` words
(shingles), and a document is inside another when at least `CONTAINED_SHARE` of its distinct
shingles are the other's. The same share tells how much of a document a prompt shows
(`shares`): an earlier turn's document counts only where the prompt shows enough of it.

Linear time and memory in the texts (they are untrusted): each text is made canonical and
shingled once; a shingle is hashed (tuples of words, in C) and looked up in a dict that keeps
at most `MAX_OWNERS` texts per shingle, so a shingle shared by every text costs a constant;
a prompt is read a slice at a time. Runs in the monitor's worker, never on the app's thread.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any

from refcheck_callbacks.integrations.shared.prompt_match import canonical

SHINGLE_WORDS = 4
"""Words per shingle: a run this long is rarely shared by chance, and a short document still
has several."""
CONTAINED_SHARE = 0.9
"""Share of a document's shingles found in another reference that makes it the same evidence
(a child chunk inside its parent: all of them; a copy the app tidied: nearly all)."""
SHOWN_SHARE = 0.5
"""Share of an earlier turn's document that a prompt must show for it to count: enough of its
text to check against, not a few words a summary kept."""
MAX_OWNERS = 4
"""Texts remembered per shingle: enough to find a container among a parent, its overlapping
children and a copy; a constant however many texts share a shingle."""
CONTAINED = "contained_in_other_reference"
"""Why a captured document is not a reference of its own (`LEFT_OUT_KEY`)."""
LEFT_OUT_KEY = "refcheck.references_left_out"
"""Request metadata: how many captured documents the answering prompt showed that are not
references of their own, by why (`{"contained_in_other_reference": 4}`); absent when none."""
_SLICE_CHARS = 1 << 16
"""Characters of a prompt shingled at a time."""


def _hashed(words: Sequence[str]) -> Iterator[int]:
    """The hashes of the shingles of a run of words."""
    starts = (islice(words, i, None) for i in range(SHINGLE_WORDS))
    return map(hash, zip(*starts, strict=False))


def shingles(text: str) -> set[int]:
    """The distinct shingles of a text (none when it has fewer than `SHINGLE_WORDS` words:
    too short to tell containment by share)."""
    words = canonical(text).split(" ")
    return set(_hashed(words)) if len(words) >= SHINGLE_WORDS else set()


def _runs(canonical_text: str) -> Iterator[list[str]]:
    """The words of a canonical text, a slice of characters at a time, each run starting
    with the previous one's last `SHINGLE_WORDS - 1` words, so that every shingle lies in one
    run (bounded memory beyond the text itself)."""
    carry: list[str] = []
    start = 0
    while start < len(canonical_text):
        end = canonical_text.find(" ", start + _SLICE_CHARS)
        end = len(canonical_text) if end < 0 else end
        run = carry + canonical_text[start:end].split()
        if len(run) >= SHINGLE_WORDS:
            yield run
        carry = run[-(SHINGLE_WORDS - 1) :]
        start = end + 1


def shares(texts: Sequence[str], prompt_canonical: str) -> list[float | None]:
    """For each text, the share of its distinct shingles that the prompt (its canonical form,
    `Prompt.canonical`) holds; None for a text too short to have shingles (too short to tell
    by share)."""
    each = [shingles(text) for text in texts]
    wanted = set().union(*each) if each else set()
    found: set[int] = set()
    for run in _runs(prompt_canonical):
        found.update(wanted.intersection(_hashed(run)))
    return [len(s & found) / len(s) if s else None for s in each]


def contained(texts: Sequence[str]) -> list[int | None]:
    """For each text, the index of another text it lies inside (`CONTAINED_SHARE` of its
    shingles are the other's), else None. The container is the larger (more shingles; of two
    the same size, the first), so that of two near copies one stays, and a text inside one
    that is inside a third is left out as well."""
    each = [shingles(text) for text in texts]
    owners: dict[int, list[int]] = {}
    for index, found in enumerate(each):
        for shingle in found:
            kept = owners.get(shingle)
            if kept is None:
                owners[shingle] = [index]
            elif len(kept) < MAX_OWNERS:
                kept.append(index)
    inside: list[int | None] = []
    for index, found in enumerate(each):
        votes: dict[int, int] = {}
        for shingle in found:
            for other in owners[shingle]:
                if other != index:
                    votes[other] = votes.get(other, 0) + 1
        need = CONTAINED_SHARE * len(found)
        larger = [
            other
            for other, count in votes.items()
            if count >= need and (len(each[other]), -other) > (len(found), -index)
        ]
        inside.append(max(larger, key=lambda o: (len(each[o]), -o)) if larger else None)
    return inside


def distinct(references: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """`references` (mappings with "text") less those inside another of them (`contained`),
    and how many were left out."""
    texts = [r["text"] if isinstance(r["text"], str) else "" for r in references]
    kept = [r for r, inside in zip(references, contained(texts), strict=True) if inside is None]
    return kept, len(references) - len(kept)


def left_out(count: int) -> dict[str, Any]:
    """The request metadata for `count` documents left out as contained (none when 0)."""
    return {LEFT_OUT_KEY: {CONTAINED: count}} if count else {}
