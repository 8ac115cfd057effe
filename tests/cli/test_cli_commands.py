"""`refcheck --help`, component specs and their errors, and `refcheck demo`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.cli.component_names import REFCHECKER_NLI_MODEL, from_refchecker_name
from refcheck_callbacks.cli.main import _spec, build_parser, main
from refcheck_callbacks.contract.registry import build_checker, build_extractor
from refcheck_callbacks.errors import ComponentSpecError
from refcheck_callbacks.extract.sentences import SentenceExtractor

COMMANDS = ["extract", "check", "extract-check", "bench", "data", "demo"]


def test_the_installed_command_lists_every_subcommand() -> None:
    executable = shutil.which("refcheck", path=str(Path(sys.executable).parent))
    assert executable, "pip install -e . installs the `refcheck` console script"
    run = subprocess.run([executable, "--help"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0
    for command in COMMANDS:
        assert command in run.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_has_complete_help(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    parser = build_parser()
    subparsers = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for action in subparsers[command]._actions:
        assert action.help, f"{command}: option {action.option_strings} has no help"
        for option in action.option_strings:
            assert option in text
    assert len(text.splitlines()) > 3


def test_file_commands_accept_refcheckers_option_names(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(
        ["check", "--input_path", "a.json", "--output_path", "b.json", "--aggregator_name", "major"]
    )
    assert (str(args.input), str(args.output), args.aggregator) == ("a.json", "b.json", "major")


def test_refcheckers_model_names_map_to_specs() -> None:
    parser = build_parser()
    args = parser.parse_args(["check", "--input", "a", "--output", "b", "--checker_name", "nli"])
    assert _spec(args, "checker") == f"nli:{REFCHECKER_NLI_MODEL}"
    args = parser.parse_args(
        ["extract-check", "--input", "a", "--output", "b", "--extractor_name", "gpt-4o",
         "--checker_api_base", "http://127.0.0.1:8000/v1"]
    )  # fmt: skip
    assert _spec(args, "extractor") == "llm:gpt-4o"
    assert _spec(args, "checker") == "embedded"
    assert args.checker_api_base == "http://127.0.0.1:8000/v1"
    with pytest.raises(ComponentSpecError, match="alignscore"):
        from_refchecker_name("alignscore")


def test_an_api_base_reaches_llm_components_only() -> None:
    checker = build_checker("llm:openai/served-model", api_base="http://127.0.0.1:8000/v1")
    assert type(checker).__name__ == "LLMChecker"
    extractor = build_extractor("llm:openai/served-model", api_base="http://127.0.0.1:8000/v1")
    assert type(extractor).__name__ == "LLMExtractor"
    with pytest.raises(ComponentSpecError, match="only for llm:MODEL"):
        build_checker("embedded", api_base="http://127.0.0.1:8000/v1")


def test_help_does_not_import_heavy_modules() -> None:
    code = (
        "import sys; from refcheck_callbacks.cli.main import build_parser; build_parser(); "
        "heavy = [m for m in ('torch', 'transformers', 'litellm') if m in sys.modules]; "
        "print(heavy); sys.exit(bool(heavy))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


def test_specs_build_the_offline_components() -> None:
    assert isinstance(build_checker("embedded"), EmbeddedChecker)
    assert isinstance(build_extractor("sentence"), SentenceExtractor)
    assert isinstance(build_extractor("embedded"), SentenceExtractor)
    built = build_checker("py:refcheck_callbacks.check.embedded.checker:EmbeddedChecker")
    assert isinstance(built, EmbeddedChecker)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("roberta", "unknown checker 'roberta'"),
        ("nli", "write nli:MODEL"),
        ("embedded:big", "takes no argument"),
        ("py:no_such_package.module:Checker", "is not available in this installation"),
        ("py:refcheck_callbacks.types:NoSuchThing", "has no 'NoSuchThing'"),
        ("py:refcheck_callbacks.types:Label", "could not be built"),
        (
            "py:refcheck_callbacks.types:Usage",
            "the checker Usage does not implement Checker: it has no check",
        ),
        ("py:just_a_module", "write py:package.module:Factory"),
    ],
)
def test_bad_checker_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(ComponentSpecError, match=message.replace("(", r"\(")):
        build_checker(spec)


def test_a_bad_spec_on_the_command_line_exits_2_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.json"
    source.write_text(json.dumps([{"response": "x", "reference": "y"}]), encoding="utf-8")
    status = main(["check", "--input", str(source), "--output", str(tmp_path / "o.json"),
                   "--checker", "magic"])  # fmt: skip
    assert status == 2
    assert "unknown checker 'magic'" in capsys.readouterr().err
    assert main(["check", "--input", str(tmp_path / "missing.json"), "--output", "o"]) == 2
    assert "input file not found" in capsys.readouterr().err


def test_bench_refuses_nonsense_options_and_unknown_datasets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "--dataset", "wice", "--limit", "0"]) == 2
    assert "at least 1" in capsys.readouterr().err
    status = main(["bench", "--dataset", "no_such_set", "--output-dir", str(tmp_path)])
    assert status == 1
    err = capsys.readouterr().err
    assert "dataset no_such_set skipped: unknown dataset" in err
    assert "no dataset could be loaded" in err


def test_a_file_that_is_not_json_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "broken.json"
    source.write_text('[{"response": ', encoding="utf-8")
    status = main(["extract", "--input", str(source), "--output", str(tmp_path / "o.json")])
    assert status == 2
    assert "is not valid JSON" in capsys.readouterr().err


def test_demo_runs_the_packaged_quickstart() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "refcheck_callbacks.cli", "demo"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "contradiction" in run.stdout.lower()
