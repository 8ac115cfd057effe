"""Components by name: checkers, extractors, conflict finders and exporters, through entry points.

Every kind of component, ours included, is registered as a Python entry point in its role's
group (`refcheck_callbacks.checkers`, `.extractors`, `.conflicts`, `.exporters`; ours are in
pyproject.toml's `[project.entry-points]`), as the OpenTelemetry SDK finds its exporters. A
spec names one, wherever a component is taken (`RefCheckMonitor(checker=...)`, `refcheck
check --checker`, `refcheck serve`, a cascade's stages):

    NAME                         a registered kind, built without an argument (`embedded`)
    NAME:ARGUMENT                a registered kind given its argument (`nli:MODEL`, `remote:URL`)
    NAME:VARIANT@ARGUMENT        a variant named in front (`nli:minicheck-flan-t5@/models/mc`)
    py:package.module:Factory    any importable class or factory, called without arguments

An entry point names either a `Kind` (the factory as a `module:attribute` path, how the spec's
argument reaches it, and a help line) or the factory itself, which `NAME` calls without
arguments and `NAME:ARGUMENT` with the argument. Installed metadata is read only when a spec
is resolved or the kinds are listed, never at import; an implementation is imported only when a
spec names it, so a missing optional part fails the spec that needs it, saying what to install.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import Distribution, EntryPoint, distributions
from typing import Any

from refcheck_callbacks.contract.components import (
    Checker,
    ConflictFinder,
    Exporter,
    Extractor,
    implementing,
)
from refcheck_callbacks.errors import (
    ComponentSpecError,
    MissingExtraError,
    ProtocolError,
    RefCheckError,
)
from refcheck_callbacks.support.logs import logger

DISTRIBUTION = "refcheck-callbacks"
"""Our own distribution: its kinds win a name another package registers too."""
PY = "py"
"""The spec prefix of a factory named by its import path."""


@dataclass(frozen=True)
class Role:
    """What a component is for: its entry point group and the protocol it implements."""

    name: str
    group: str
    protocol: type
    off: frozenset[str] = field(default_factory=frozenset)
    """Specs that mean "no component" (a conflict stage can be left out)."""
    needs: str | None = None
    """What a component of this role needs, said when an object lacks it; by default the
    protocol's members are named (`implementing`)."""


CHECKERS = Role("checker", "refcheck_callbacks.checkers", Checker)
EXTRACTORS = Role("extractor", "refcheck_callbacks.extractors", Extractor)
CONFLICT_FINDERS = Role(
    "conflict stage",
    "refcheck_callbacks.conflicts",
    ConflictFinder,
    off=frozenset({"none", "off"}),
    needs="a `name` and `async find(items)`",
)
EXPORTERS = Role("exporter", "refcheck_callbacks.exporters", Exporter)


@dataclass(frozen=True)
class Kind:
    """A registered kind's spec syntax, readable without importing its implementation."""

    factory: str
    """`module:attribute` of the class or function that builds the component."""
    help: str
    """One line for `--help` (the spec's form first: `nli:MODEL or ...`)."""
    argument: str | None = None
    """The keyword the spec's argument is passed as; None when the kind takes none."""
    argument_optional: bool = False
    """`NAME` alone is valid too: the factory's own default is used (the shipped reader)."""
    variant: str | None = None
    """The keyword a `VARIANT@` in front of the argument is passed as (a family, a preset)."""
    serves_api: bool = False
    """Takes `api_base`: its model is served behind an OpenAI-compatible endpoint (vLLM)."""


def registered(role: Role) -> dict[str, EntryPoint]:
    """The names registered for `role`, ours first, each with its entry point (not loaded). A
    name registered twice keeps the first registration, and the other is logged."""
    found: dict[str, EntryPoint] = {}
    points = sorted(_entry_points(role.group), key=lambda p: _distribution(p) != DISTRIBUTION)
    for point in points:
        if point.name in found:
            logger.warning(
                "refcheck: %s %r is registered by %s and by %s; the first one is used",
                role.name,
                point.name,
                _distribution(found[point.name]),
                _distribution(point),
            )
            continue
        found[point.name] = point
    return found


_UNREADABLE: set[str] = set()
"""Distributions whose metadata could not be read, already warned about (once a process)."""


def _entry_points(group: str) -> list[EntryPoint]:
    """The group's entry points, read a distribution at a time. `importlib.metadata`'s
    `entry_points()` reads them all at once, so one malformed line in any package's
    `entry_points.txt` fails every group, ours too; here that package alone is skipped, with
    one warning. The first distribution of a name on the path wins, as `entry_points()` has it."""
    points: list[EntryPoint] = []
    seen: set[str] = set()
    for dist in distributions():
        try:
            name = _normalized_name(dist)
            if name in seen:
                continue
            seen.add(name)
            points += dist.entry_points.select(group=group)
        except Exception as exc:
            where = str(getattr(dist, "_path", None) or dist)
            if where not in _UNREADABLE:
                _UNREADABLE.add(where)
                # Formatted here: the log's rate limit keys on the template, and each
                # distribution is said once (`_UNREADABLE`).
                logger.warning(
                    f"refcheck: skipping the entry points of {where}, whose metadata cannot "
                    f"be read: {exc!r}"
                )
    return points


def _normalized_name(dist: Distribution) -> str:
    """The name `entry_points()` tells distributions apart by: from the folder's name where
    it can (reading every METADATA file instead takes ten times as long)."""
    name = getattr(dist, "_normalized_name", None)
    if isinstance(name, str):
        return name
    return re.sub(r"[-_.]+", "_", dist.metadata["Name"] or "").lower()


def _distribution(point: EntryPoint) -> str | None:
    return None if point.dist is None else point.dist.name


def help_lines(role: Role) -> list[tuple[str, str]]:
    """(name, help) for each registered kind, for `--help`. Our kinds' help is read from their
    `Kind`; another package's kind is described by its package and target, unloaded, so that
    listing the kinds never imports third-party code."""
    lines = []
    for name, point in registered(role).items():
        target = None
        if _distribution(point) == DISTRIBUTION:
            target = point.load()
        if isinstance(target, Kind):
            lines.append((name, target.help))
        else:
            package = _distribution(point) or "an unknown package"
            lines.append((name, f"from {package}: {point.value}"))
    return lines


def accepts_api_base(role: Role, spec: str) -> bool:
    """Whether the kind `spec` names takes an API base (a cascade hands its own down)."""
    point = registered(role).get(spec.strip().partition(":")[0])
    target = None if point is None else _loaded(point, spec)
    return isinstance(target, Kind) and target.serves_api


def build(role: Role, spec: str, api_base: str | None = None, **options: Any) -> Any:
    """The component `spec` names, implementing the role's protocol; `ComponentSpecError`
    says why when it cannot be built. `options` are passed to the factory as keywords (an
    exporter is told `capture_content`). None for a spec in `role.off`."""
    spec = spec.strip()
    if spec in role.off:
        return None
    name, _, argument = spec.partition(":")
    if name == PY:
        module, _, attribute = argument.rpartition(":")
        if not module or not attribute:
            raise ComponentSpecError(f"{spec!r}: write py:package.module:Factory")
        _refuse_api_base(spec, api_base)
        built = _call(_load(module, attribute, spec), spec, **options)
    else:
        built = _build_registered(role, spec, name, argument, api_base, options)
    return _checked(role, built, spec)


def _build_registered(
    role: Role,
    spec: str,
    name: str,
    argument: str,
    api_base: str | None,
    options: dict[str, Any],
) -> Any:
    kinds = registered(role)
    point = kinds.get(name)
    if point is None:
        known = ", ".join([*kinds, *sorted(role.off), PY])
        if not kinds:
            known += f" (nothing is registered: is {DISTRIBUTION} installed? pip install -e .)"
        raise ComponentSpecError(f"unknown {role.name} {name!r} in {spec!r}; known: {known}")
    target, whose = _loaded(point, spec), _whose(point)
    if not isinstance(target, Kind):
        _refuse_api_base(spec, api_base)
        return _call(target, spec, *([argument] if argument else []), whose=whose, **options)
    if target.argument is None and argument:
        raise ComponentSpecError(f"{spec!r}: the {name!r} {role.name} takes no argument")
    if target.argument is not None and not argument and not target.argument_optional:
        raise ComponentSpecError(f"{spec!r}: write {name}:{target.argument.upper()}")
    if not target.serves_api:
        _refuse_api_base(spec, api_base)
    kwargs: dict[str, Any] = dict(options)
    variant, _, rest = argument.partition("@")
    if target.variant is not None and rest and not re.search(r"[/:\\]", variant):
        kwargs[target.variant], argument = variant, rest
    if target.argument is not None and argument:
        kwargs[target.argument] = argument
    if api_base is not None:
        kwargs["api_base"] = api_base
    module, _, attribute = target.factory.partition(":")
    return _call(_load(module, attribute, spec, whose), spec, whose=whose, **kwargs)


def _refuse_api_base(spec: str, api_base: str | None) -> None:
    if api_base is not None:
        raise ComponentSpecError(f"{spec!r}: an API base is only for llm:MODEL specs")


def _loaded(point: EntryPoint, spec: str) -> Any:
    try:
        return point.load()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a plugin's import may even `sys.exit`
        raise ComponentSpecError(
            f"{spec!r}: the entry point {point.name} = {point.value} of "
            f"{_distribution(point) or 'an unknown package'} cannot be loaded: {exc!r}"
        ) from exc


def _whose(point: EntryPoint) -> str:
    """Who registered it, for an error message; nothing for our own kinds."""
    package = _distribution(point)
    if package == DISTRIBUTION:
        return ""
    return f" (registered by {package or 'an unknown package'})"


def _load(module: str, attribute: str, spec: str, whose: str = "") -> Callable[..., Any]:
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module.startswith(exc.name):
            raise ComponentSpecError(
                f"{spec!r}{whose}: module {module!r} is not available in this installation"
            ) from exc
        raise ComponentSpecError(
            f"{spec!r}{whose}: module {module!r} needs {exc.name!r}, which is not installed"
        ) from exc
    except ImportError as exc:
        raise ComponentSpecError(f"{spec!r}{whose}: {exc}") from exc
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise ComponentSpecError(f"{spec!r}{whose}: importing {module!r} failed: {exc!r}") from exc
    try:
        factory = getattr(loaded, attribute)
    except AttributeError as exc:
        raise ComponentSpecError(f"{spec!r}{whose}: {module!r} has no {attribute!r}") from exc
    if not callable(factory):
        raise ComponentSpecError(f"{spec!r}{whose}: {module}.{attribute} is not callable")
    return factory


def _call(
    factory: Callable[..., Any], spec: str, *args: Any, whose: str = "", **kwargs: Any
) -> Any:
    """The built component; a constructor that fails (a model that cannot load, a plugin that
    calls `sys.exit`) is a spec error. Ctrl-C is the user's, and goes through."""
    try:
        return factory(*args, **kwargs)
    except (MissingExtraError, ComponentSpecError):
        raise  # the message already says what to do
    except RefCheckError as exc:  # written for the user: no need of the class name
        raise ComponentSpecError(f"{spec!r}{whose} could not be built: {exc}") from exc
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise ComponentSpecError(f"{spec!r}{whose} could not be built: {exc!r}") from exc


def _checked(role: Role, built: Any, spec: str) -> Any:
    try:
        return _implementing(role, built)
    except ProtocolError as exc:
        raise ComponentSpecError(f"{spec!r}: {exc}") from exc


def _implementing(role: Role, component: Any) -> Any:
    if role.needs is not None and not isinstance(component, role.protocol):
        raise ComponentSpecError(
            f"a {role.name} needs {role.needs}; got {type(component).__name__}"
        )
    return implementing(component, role.protocol, role.name)


def is_built(component: object, protocol: type) -> bool:
    """Whether `component` is the component itself (not a spec, class or factory)."""
    return not isinstance(component, (str, type)) and isinstance(component, protocol)


def resolve(role: Role, source: Any) -> Any:
    """A component from what an app passes: a spec, a factory called without arguments (a
    class, a module-level function), or the component itself. An object that is none of these,
    or a factory's product, must implement the role's protocol (`ProtocolError` naming what it
    lacks). None stays None where the role may be left out."""
    if source is None and role.off:
        return None
    if isinstance(source, str):
        return build(role, source)
    if callable(source) and not is_built(source, role.protocol):
        source = source()
    return _implementing(role, source)


Source = str | Callable[[], Any]
"""A spec or a factory: how a component is made rather than the component itself."""
ConflictSource = ConflictFinder | Source | None
"""A conflict finder, a spec, a factory, or None for no conflict stage."""


def build_checker(spec: str, api_base: str | None = None) -> Checker:
    """The checker `spec` names (see the module)."""
    checker: Checker = build(CHECKERS, spec, api_base)
    return checker


def build_extractor(spec: str, api_base: str | None = None) -> Extractor:
    """The extractor `spec` names (see the module)."""
    extractor: Extractor = build(EXTRACTORS, spec, api_base)
    return extractor


def conflict_finder(source: ConflictSource) -> ConflictFinder | None:
    """The conflict finder `source` names or makes; None for `none` / None (verdicts stay as
    checkers give them)."""
    finder: ConflictFinder | None = resolve(CONFLICT_FINDERS, source)
    return finder
