"""An app whose monitor audits every answer with the offline checker, run as
`python audit_app.py AUDIT_FILE`: writes the audit file a reviewer then labels, as a real app's
monitor would (the default embedded checker and conflict stage, on its own thread)."""

from __future__ import annotations

import sys

from refcheck_callbacks import RefCheckMonitor

REFERENCES = [
    {"id": "eiffel", "text": "The Eiffel Tower is 330 metres tall. It was completed in 1889."},
    {"id": "louvre", "text": "The Louvre is the most visited museum in the world."},
]
ANSWERS = [
    ("How tall is the Eiffel Tower?", "The Eiffel Tower is 330 metres tall."),
    ("When was the Eiffel Tower completed?", "The Eiffel Tower was completed in 1925."),
    (
        "Tell me about the Louvre.",
        "The Louvre is the most visited museum in the world. It has a glass pyramid.",
    ),
]


def main(path: str) -> None:
    with RefCheckMonitor(placement="thread", exporters=[], audit_rate=1.0, audit_file=path) as m:
        for question, answer in ANSWERS:
            m.submit(question=question, answer=answer, references=REFERENCES)
        m.flush(60)
        print(m.stats.snapshot())


if __name__ == "__main__":
    main(sys.argv[1])
