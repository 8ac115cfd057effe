"""What the README and the docs show a user works as written: every documented import, the
quickstart as pasted for every outcome, and every Python snippet of the README and of docs/,
page by page (`doc_snippets`: a block marked `<!-- not run: ... -->` is compiled and its
imports run, since it needs what a test machine cannot have)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from doc_snippets import snippets

ROOT = Path(__file__).resolve().parents[1]
HELPERS = Path(__file__).resolve().parent / "helpers"
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
DOCUMENTS = (*PAGES, "deploy/README.md")
_IMPORT = re.compile(
    r"^(?:from refcheck_callbacks[\w.]* import [^\n(]+|import refcheck_callbacks[\w.]*)$", re.M
)
README_LINES = 200


def _imports(document: str) -> list[str]:
    return _IMPORT.findall((ROOT / document).read_text(encoding="utf-8"))


@pytest.mark.parametrize("document", ["README.md", "deploy/README.md", "docs/extending.md"])
def test_every_documented_import_works(document: str) -> None:
    lines = _imports(document)
    assert lines, f"{document} shows no refcheck_callbacks import"
    code = "\n".join(lines)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"{document}:\n{code}\n{run.stderr[-2000:]}"


def test_the_readme_is_a_front_door() -> None:
    """The two commands first, within about 200 lines, and every docs page it links exists."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_LINES
    assert text.index("make demo") < text.index("## What it does") < text.index("## Install")
    linked = set(re.findall(r"\]\((docs/[\w.-]+\.md|deploy/README\.md)\)", text))
    assert {f"docs/{page}.md" for page in ("operations", "telemetry", "checkers",
            "scaling-out", "development", "extending")} <= linked  # fmt: skip
    assert all((ROOT / page).is_file() for page in linked)


def _python_block(document: str, heading: str) -> str:
    """The first ```python block after `heading` in `document`."""
    text = (ROOT / document).read_text(encoding="utf-8")
    after = text[text.index(f"\n{heading}\n") :]
    return after.split("```python\n", 1)[1].split("\n```", 1)[0]


QUICKSTART_ANSWER = 'answer="The Eiffel Tower is 450 metres tall.",'
QUICKSTART_REFERENCES = 'references=[Reference(text="The tower is 330 metres tall.", id="doc-1")],'


def _variant(snippet: str, old: str, new: str) -> str:
    """The snippet with its `monitor.check(...)` call changed: another outcome, same code."""
    head, call, tail = snippet.partition("result = monitor.check(")
    assert call and tail.count(old) == 1, f"the quickstart no longer has {old}"
    return head + call + tail.replace(old, new)


def test_the_quickstart_runs_as_pasted_for_every_outcome() -> None:
    snippet = _python_block("README.md", "## Quickstart")
    assert len(snippet.splitlines()) <= 10
    runs = {
        "checked": snippet,
        "no_references": _variant(snippet, QUICKSTART_REFERENCES, "references=[],"),
        # A refusal abstains. (A greeting, "Happy to help!", is read as a short answer to the
        # question since the short-answer preparation of f4be554, and checked.)
        "abstain": _variant(snippet, QUICKSTART_ANSWER, 'answer="I don\'t know.",'),
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


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if snippets((ROOT / p).read_text("utf-8"))])
def test_every_snippet_of_the_page_runs(page: str) -> None:
    blocks = snippets((ROOT / page).read_text(encoding="utf-8"))
    run = subprocess.run(
        [sys.executable, str(HELPERS / "doc_snippets.py"), str(ROOT / page)],
        capture_output=True, text=True, timeout=600, cwd=HELPERS,
    )  # fmt: skip
    assert run.returncode == 0, f"{page}:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    said = [
        line.split(" ", 1)[0] for line in run.stdout.splitlines() if line[:4] in ("ran ", "comp")
    ]
    assert said == ["compiled" if b.not_run else "ran" for b in blocks], run.stdout


def test_most_snippets_run_and_every_skip_says_why() -> None:
    blocks = [b for p in PAGES for b in snippets((ROOT / p).read_text(encoding="utf-8"))]
    compiled_only = [b for b in blocks if b.not_run]
    assert len(blocks) >= 12
    assert len(compiled_only) <= 3, [b.not_run for b in compiled_only]
    assert all("needs" in b.not_run for b in compiled_only if b.not_run)
