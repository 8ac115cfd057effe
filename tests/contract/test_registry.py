"""A package of someone else's registers a checker and an exporter through entry points, and
they work by name: `refcheck check --checker NAME`, `RefCheckMonitor(checker="NAME")` (in the
default checking process, which resolves the name itself), `exporters=["NAME"]`.

The package is built and installed for real (pip, offline, no build isolation) into a folder
that the subprocesses get on their path, as a site-packages directory would be.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.contract.registry import (
    CHECKERS,
    EXPORTERS,
    build_checker,
    help_lines,
    registered,
)
from refcheck_callbacks.errors import ComponentSpecError

PLUGIN = "claim-in-reference"
PLUGIN_PACKAGE = "refcheck-plugin-example"

CHECKER_MODULE = '''
"""A checker of someone else's: a claim is supported when a reference holds its words."""

from refcheck_callbacks.contract import Checker
from refcheck_callbacks.types import Label, Verdict


class ClaimInReference:
    name = "claim-in-reference"
    needs_references = True

    async def check(self, items):
        verdicts = []
        for item in items:
            words = item.claim.text.lower().rstrip(".").split()
            found = any(
                all(word in reference.text.lower() for word in words)
                for reference in item.references
            )
            label = Label.ENTAILMENT if found else Label.NEUTRAL
            verdicts.append(Verdict(label=label, confidence=0.9))
        return verdicts


assert isinstance(ClaimInReference(), Checker)


class ExitsWhenBuilt:
    """A plugin that ends the process it is built in (a CLI habit in library code)."""

    def __init__(self):
        raise SystemExit("exits when built")
'''

EXITING_MODULE = '''
"""A plugin module that ends the process that imports it."""
import sys

sys.exit("exits at import")
'''

INTERRUPTED_MODULE = '''
"""A plugin module whose import the user interrupts (Ctrl-C)."""
raise KeyboardInterrupt
'''

EXPORTER_MODULE = '''
"""An exporter of someone else's: one JSON line per result, into $PLUGIN_RESULTS."""

import json
import os

from refcheck_callbacks.contract import Exporter


class ResultLines(Exporter):
    name = "result-lines"

    def __init__(self, capture_content: bool = False) -> None:
        self.capture_content = capture_content
        self.path = os.environ["PLUGIN_RESULTS"]

    def export(self, results):
        with open(self.path, "a", encoding="utf-8") as out:
            for result in results:
                line = {
                    "outcome": result.outcome.value,
                    "checker": result.checker,
                    "placement": result.placement.value,
                    "labels": [v.label.value for v in result.verdicts],
                    "answer": result.request.answer if self.capture_content else None,
                }
                out.write(json.dumps(line) + "\\n")
'''

PYPROJECT = f"""
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "{PLUGIN_PACKAGE}"
version = "0.1.0"

[tool.setuptools]
py-modules = ["plugin_checker", "plugin_exporter", "plugin_exits", "plugin_interrupted"]

[project.entry-points."refcheck_callbacks.checkers"]
{PLUGIN} = "plugin_checker:ClaimInReference"
embedded = "plugin_checker:ClaimInReference"
broken = "plugin_missing:Nothing"
exits-at-import = "plugin_exits:Anything"
exits-when-built = "plugin_checker:ExitsWhenBuilt"
interrupted = "plugin_interrupted:Anything"

[project.entry-points."refcheck_callbacks.exporters"]
result-lines = "plugin_exporter:ResultLines"
"""

APP = """
import json
import sys

from refcheck_callbacks import RefCheckMonitor


if __name__ == "__main__":
    with RefCheckMonitor(checker="claim-in-reference", exporters=["result-lines"]) as monitor:
        result = monitor.check(
            answer="The tower is in Paris. It has a gift shop.",
            references=["The Eiffel Tower is in Paris."],
        )
        print(json.dumps({
            "runner": monitor.runner.placement.value,
            "checker": result.checker,
            "labels": [v.label.value for v in result.verdicts],
        }))
"""


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin package, built and installed into a folder of its own."""
    root = tmp_path_factory.mktemp("plugin")
    source = root / "source"
    source.mkdir()
    (source / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT), encoding="utf-8")
    (source / "plugin_checker.py").write_text(CHECKER_MODULE, encoding="utf-8")
    (source / "plugin_exporter.py").write_text(EXPORTER_MODULE, encoding="utf-8")
    (source / "plugin_exits.py").write_text(EXITING_MODULE, encoding="utf-8")
    (source / "plugin_interrupted.py").write_text(INTERRUPTED_MODULE, encoding="utf-8")
    site = root / "site"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env |= {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1"}
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "--target", str(site), str(source)],
        check=True, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert (site / "plugin_checker.py").is_file()
    return site


@pytest.fixture
def on_path(plugin_site: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The plugin's folder on this process's path, as an installed package would be."""
    monkeypatch.syspath_prepend(str(plugin_site))
    yield plugin_site


def _env(plugin_site: Path, results: Path) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(plugin_site), os.environ.get("PYTHONPATH")) if p)
    return os.environ | {"PYTHONPATH": path, "PLUGIN_RESULTS": str(results)}


def test_the_command_checks_with_a_checker_registered_by_another_package(
    plugin_site: Path, tmp_path: Path
) -> None:
    refcheck = shutil.which("refcheck", path=str(Path(sys.executable).parent))
    assert refcheck, "pip install -e . installs the `refcheck` console script"
    source, out = tmp_path / "in.json", tmp_path / "out.json"
    record = {
        "response": "The tower is in Paris. It has a gift shop.",
        "reference": ["The Eiffel Tower is in Paris."],
        "claims": ["The tower is in Paris.", "It has a gift shop."],
    }
    source.write_text(json.dumps([record]), encoding="utf-8")
    env = _env(plugin_site, tmp_path / "unused.jsonl")
    run = subprocess.run(
        [refcheck, "check", "--input", str(source), "--output", str(out), "--checker", PLUGIN,
         "--no-progress"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    [checked] = json.loads(out.read_text(encoding="utf-8"))
    assert checked["refcheck"]["checker"] == PLUGIN
    assert checked["ys"] == ["Entailment", "Neutral"]

    shown = subprocess.run(
        [refcheck, "check", "--help"], capture_output=True, text=True, timeout=60, env=env
    )
    assert f"{PLUGIN:<11} from {PLUGIN_PACKAGE}: plugin_checker:ClaimInReference" in shown.stdout
    assert "embedded    offline learned checker" in shown.stdout  # ours keeps its name


def test_a_monitor_checks_with_it_by_name_in_its_checking_process_and_exports_by_name(
    plugin_site: Path, tmp_path: Path
) -> None:
    app, results = tmp_path / "app.py", tmp_path / "results.jsonl"
    app.write_text(APP, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(app)],
        capture_output=True, text=True, timeout=300, env=_env(plugin_site, results),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    said = json.loads(run.stdout.strip().splitlines()[-1])
    assert said == {
        "runner": "process",
        "checker": PLUGIN,
        "labels": ["entailment", "neutral"],
    }
    [exported] = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert exported["outcome"] == "checked" and exported["placement"] == "process"
    assert exported["answer"] is None  # built with the monitor's capture_content=False


@pytest.mark.usefixtures("on_path")
def test_our_kinds_win_a_name_another_package_registers_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    points = registered(CHECKERS)
    assert points["embedded"].value == "refcheck_callbacks.check.registered:EMBEDDED"
    assert points[PLUGIN].value == "plugin_checker:ClaimInReference"
    assert "is registered by refcheck-callbacks and by refcheck-plugin-example" in caplog.text
    assert type(build_checker(PLUGIN)).__name__ == "ClaimInReference"
    assert "result-lines" in registered(EXPORTERS)


@pytest.mark.usefixtures("on_path")
def test_a_broken_registration_fails_only_its_own_name_and_says_whose_it_is() -> None:
    broken = f"broken = plugin_missing:Nothing of {PLUGIN_PACKAGE} cannot be loaded"
    with pytest.raises(ComponentSpecError, match=broken):
        build_checker("broken")
    with pytest.raises(ComponentSpecError, match="could not be built"):
        build_checker(f"{PLUGIN}:an-argument-it-does-not-take")
    lines = dict(help_lines(CHECKERS))
    assert lines["broken"] == f"from {PLUGIN_PACKAGE}: plugin_missing:Nothing"  # never loaded
    assert lines["nli"].startswith("nli:MODEL or nli:FAMILY@MODEL")


def test_an_unknown_name_lists_what_is_registered() -> None:
    with pytest.raises(ComponentSpecError, match="unknown checker 'magic' in 'magic'") as raised:
        build_checker("magic")
    known = str(raised.value).partition("known: ")[2].split(", ")
    assert {"cascade", "embedded", "llm", "nli", "remote", "py"} <= set(known)


@pytest.mark.usefixtures("on_path")
@pytest.mark.parametrize("name", ["exits-at-import", "exits-when-built"])
def test_a_plugin_that_exits_fails_only_its_own_name_and_says_whose_it_is(name: str) -> None:
    for _ in range(2):
        with pytest.raises(ComponentSpecError, match=f"of {PLUGIN_PACKAGE}|by {PLUGIN_PACKAGE}"):
            build_checker(name)
    with pytest.raises(ComponentSpecError, match="SystemExit") as raised:
        RefCheckMonitor(checker=name, placement="thread", exporters=[])
    assert name in str(raised.value)
    assert type(build_checker(PLUGIN)).__name__ == "ClaimInReference"


@pytest.mark.usefixtures("on_path")
def test_ctrl_c_while_a_plugin_imports_is_the_users_and_goes_through() -> None:
    with pytest.raises(KeyboardInterrupt):
        build_checker("interrupted")


EXITING_APP = """
import json
import time

from refcheck_callbacks import RefCheckMonitor


if __name__ == "__main__":
    started = time.monotonic()
    with RefCheckMonitor(checker="exits-at-import", exporters=[]) as monitor:
        results = [monitor.check(answer="The tower is in Paris.", references=["Paris."])]
        results.append(monitor.check(answer="The tower is in Paris.", references=["Paris."]))
        print(json.dumps({
            "outcomes": [r.outcome.value for r in results],
            "messages": [r.message for r in results],
            "restarts": monitor.runner.restarts,
            "seconds": time.monotonic() - started,
        }))
"""


def test_in_the_checking_process_a_plugin_that_exits_fails_each_check_with_why(
    plugin_site: Path, tmp_path: Path
) -> None:
    app = tmp_path / "app.py"
    app.write_text(EXITING_APP, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(app)],
        capture_output=True, text=True, timeout=300, env=_env(plugin_site, tmp_path / "unused"),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    said = json.loads(run.stdout.strip().splitlines()[-1])
    assert said["outcomes"] == ["error", "error"]
    for message in said["messages"]:
        assert "could not build its components" in message
        assert f"of {PLUGIN_PACKAGE} cannot be loaded: SystemExit('exits at import')" in message
    assert said["restarts"] == 0
    assert run.stderr.count("Traceback") == 0


MALFORMED = {
    "a line without '='": b"[console_scripts]\nthis line names nothing\n",
    "bytes that are not UTF-8": b"[console_scripts]\ntool = \xff\xfe:main\n",
}


@pytest.mark.usefixtures("on_path")
@pytest.mark.parametrize("entry_points", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_distribution_with_malformed_metadata_is_skipped_with_one_warning(
    entry_points: bytes,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`importlib.metadata.entry_points()` fails for every group when one distribution's
    `entry_points.txt` cannot be parsed; only that distribution is skipped here."""
    dist_info = tmp_path / "someone_elses-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: someone-elses\nVersion: 1.0\n"
    )
    (dist_info / "entry_points.txt").write_bytes(entry_points)
    monkeypatch.syspath_prepend(str(tmp_path))

    assert {"embedded", "nli", PLUGIN} <= set(registered(CHECKERS))
    assert type(build_checker(PLUGIN)).__name__ == "ClaimInReference"
    assert "result-lines" in registered(EXPORTERS)
    with RefCheckMonitor(checker=PLUGIN, placement="thread", exporters=[]) as monitor:
        result = monitor.check(answer="The tower is in Paris.", references=["Paris."])
    assert result.outcome.value == "checked"
    warned = [r.getMessage() for r in caplog.records if "skipping" in r.getMessage()]
    assert len(warned) == 1 and str(dist_info) in warned[0]
