"""The package's layers point one way: read from every import statement of every module.

`types`, `errors`, `support` and the contract are the floor and import nothing above them; the
engine never imports the command line; the exporters never import the alert rules; an
integration imports only the contract, `types`, `support` and its own folders; and no module
imports, even lazily, one that imports it back.
Every import counts: at the top, inside a function, under `TYPE_CHECKING`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "refcheck_callbacks"
NAME = PACKAGE.name


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imported(path: Path) -> Iterator[str]:
    """Every module of ours `path` imports (a `from X import Y` of a submodule names it)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            if name in MODULES:
                yield name


IMPORTS = {module: set(_imported(path)) for module, path in MODULES.items()}


def _layer(module: str) -> str:
    """`types`, `errors`, `contract`, `engine`, ...: the top-level module or folder."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _outside(module: str, allowed: set[str]) -> set[str]:
    return {m for m in IMPORTS[module] if _layer(m) not in allowed and m != NAME}


FLOOR = {
    "types": set(),
    "errors": {"types"},
    "support": {"types", "errors", "support"},
    "contract": {"types", "errors", "support", "contract"},
}


def test_every_layer_is_read() -> None:
    layers = {_layer(module) for module in MODULES}
    assert {"types", "errors", "contract", "support", "engine", "integrations", "cli"} <= layers
    assert {"exporters", "alerting"} <= layers
    assert sum(len(imports) for imports in IMPORTS.values()) > 300


@pytest.mark.parametrize("floor", sorted(FLOOR))
def test_the_floor_imports_nothing_above_it(floor: str) -> None:
    above = {
        module: sorted(_outside(module, FLOOR[floor]))
        for module in MODULES
        if _layer(module) == floor
    }
    assert {module: names for module, names in above.items() if names} == {}


def test_the_engine_never_imports_the_command_line() -> None:
    upward = {
        module: sorted(m for m in IMPORTS[module] if _layer(m) in {"cli", "bench", "demo"})
        for module in MODULES
        if _layer(module) == "engine"
    }
    assert {module: names for module, names in upward.items() if names} == {}


def test_exporters_never_import_the_alert_rules() -> None:
    """`exporters/` is what leaves the app's process; `alerting/` (rules, simulator) only reads
    its metric names, and numpy or promtool must never be a step away from the app."""
    reaching = {
        module: sorted(m for m in IMPORTS[module] if _layer(m) == "alerting")
        for module in MODULES
        if _layer(module) == "exporters"
    }
    assert {module: names for module, names in reaching.items() if names} == {}


def test_integrations_import_only_the_contract_types_and_support() -> None:
    allowed = {"contract", "types", "errors", "support", "integrations"}
    beyond = {
        module: sorted(_outside(module, allowed))
        for module in MODULES
        if _layer(module) == "integrations"
    }
    assert {module: names for module, names in beyond.items() if names} == {}


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a circle (strongly
    connected components of more than one module, Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in edges.get(module, set()):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return circles


def test_no_module_imports_one_that_imports_it_back() -> None:
    """A module importing its own package (whose `__init__` runs first anyway) is no edge."""
    edges = {
        module: {m for m in imports if not module.startswith(f"{m}.")}
        for module, imports in IMPORTS.items()
    }
    assert _circles(edges) == []


def test_a_planted_circle_is_found() -> None:
    edges = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": set()}
    assert _circles(edges) == [["a", "b", "c"]]
