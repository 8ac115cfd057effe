"""The import lines the READMEs show a user work as written, and the first example runs as
pasted, whatever the outcome of the answer it checks."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "deploy/README.md")
_IMPORT = re.compile(
    r"^(?:from refcheck_callbacks[\w.]* import [^\n(]+|import refcheck_callbacks[\w.]*)$", re.M
)


def _imports(document: str) -> list[str]:
    return _IMPORT.findall((ROOT / document).read_text(encoding="utf-8"))


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_documented_import_works(document: str) -> None:
    lines = _imports(document)
    assert lines, f"{document} shows no refcheck_callbacks import"
    code = "\n".join(lines)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"{document}:\n{code}\n{run.stderr[-2000:]}"


def _python_block(document: str, heading: str) -> str:
    """The first ```python block after `heading` in `document`."""
    text = (ROOT / document).read_text(encoding="utf-8")
    after = text[text.index(f"\n{heading}\n") :]
    return after.split("```python\n", 1)[1].split("\n```", 1)[0]


USE_IT_ANSWER = 'answer="The Eiffel Tower is 450 metres tall.",'
USE_IT_REFERENCES = 'references=[Reference(text="The tower is 330 metres tall.", id="doc-1")],'


def _variant(snippet: str, old: str, new: str) -> str:
    """The snippet with its `monitor.check(...)` call changed: another outcome, same code."""
    head, call, tail = snippet.partition("result = monitor.check(")
    assert call and tail.count(old) == 1, f"the Use it snippet no longer has {old}"
    return head + call + tail.replace(old, new)


def test_the_use_it_snippet_runs_as_pasted_for_every_outcome() -> None:
    snippet = _python_block("README.md", "## Use it")
    runs = {
        "checked": snippet,
        "no_references": _variant(snippet, USE_IT_REFERENCES, "references=[],"),
        "abstain": _variant(snippet, USE_IT_ANSWER, 'answer="Happy to help!",'),
    }
    code = "".join(
        f"print('--- {name}')\nexec({source!r}, {{}})\n" for name, source in runs.items()
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    first_lines = {}
    for part in run.stdout.split("--- ")[1:]:
        name, _, output = part.partition("\n")
        first_lines[name] = output.splitlines()[0]
    assert list(first_lines) == list(runs), run.stdout
    assert first_lines["checked"].startswith("Outcome.CHECKED ResponseLabel.")
    assert not first_lines["checked"].endswith(" None"), "a checked answer has a ratio"
    assert first_lines["no_references"] == "Outcome.NO_REFERENCES None None"
    assert first_lines["abstain"] == "Outcome.ABSTAIN ResponseLabel.ABSTAIN None"
