"""The layout holds: every room of ``bgtrain`` and ``engine`` stands on a floor, and imports (at the top of a
module or inside a function alike) only go down to lower floors, so there is no import circle between
rooms. The floors are the map of ``docs/architecture.md``; a new room must be placed here. And every import
of the project's own names, in the package, its scripts and its tests (slow ones and those inside functions
too), finds what it names: a move leaves no stale path for a run that is not the default one to find."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# room -> floor; a room imports only rooms on lower floors.
FLOORS = {
    "engine": 0,
    "bgtrain.outcomes": 1,
    "bgtrain.files": 1,
    "bgtrain.directory_lock": 1,
    "bgtrain.model": 2,
    "bgtrain.cube": 2,
    "bgtrain.matfile": 2,
    "bgtrain.values": 3,
    "bgtrain.export": 3,
    "bgtrain.arena": 4,
    "bgtrain.rollout": 4,
    "bgtrain.datasets": 5,
    "bgtrain.benchmark": 5,
    "bgtrain.analysis": 5,
    "bgtrain.training": 6,
    "bgtrain.distributed": 7,
    "bgtrain.generation": 7,
    "bgtrain.web": 7,
    "bgtrain.api": 7,
    "bgtrain.commands": 8,
    "bgtrain.cli": 8,
}
MAX_FLAT_MODULES = 8
MAX_MODULE_LINES = 600


def room_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "engine":
        return "engine"
    if parts[0] != "bgtrain" or len(parts) == 1:
        return None
    return f"bgtrain.{parts[1]}"


def modules() -> list[tuple[str, Path]]:
    found = []
    for package in ("bgtrain", "engine"):
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            found.append((name, path))
    return found


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import in the file, wherever it stands."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # ``from bgtrain import x`` names the room x
            found += [(node.lineno, f"{node.module}.{alias.name}" if node.module == "bgtrain" else node.module)
                      for alias in node.names]
    return found


def test_every_room_has_a_floor():
    rooms = {room_of(name) for name, _ in modules()} - {None}
    assert rooms <= set(FLOORS), f"place these rooms in FLOORS and docs/architecture.md: {sorted(rooms - set(FLOORS))}"


def test_imports_only_go_down():
    wrong = []
    for name, path in modules():
        source = room_of(name)
        if source is None:
            continue
        for line, module in imports(path):
            target = room_of(module)
            if target is None or target == source:
                continue
            if FLOORS[target] >= FLOORS[source]:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {source} (floor {FLOORS[source]}) imports "
                             f"{module} (floor {FLOORS[target]})")
    assert not wrong, "imports that run up or sideways:\n" + "\n".join(wrong)


def test_the_hall_stays_small_and_modules_short():
    flat = [path.name for path in (ROOT / "bgtrain").glob("*.py")]
    assert len(flat) <= MAX_FLAT_MODULES, f"{len(flat)} modules flat in bgtrain/: {sorted(flat)}"
    long = [f"{path.relative_to(ROOT)} ({lines} lines)" for _, path in modules()
            if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES]
    assert not long, "modules over 600 lines: " + ", ".join(long)


def project_names(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name or None) of every absolute import of ``bgtrain`` or ``engine`` in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, node.module, alias.name) for alias in node.names]
    return [entry for entry in found if entry[1].split(".")[0] in ("bgtrain", "engine")]


def unresolved(module: str, name: str | None) -> str | None:
    """Why ``from module import name`` (``import module`` for None) fails, or None when it resolves. A
    third-party package missing here (an optional extra) is not the import's fault."""
    try:
        imported = importlib.import_module(module)
        if name is None or name == "*" or hasattr(imported, name):
            return None
        importlib.import_module(f"{module}.{name}")  # a submodule not yet imported
        return None
    except ModuleNotFoundError as error:
        if error.name and error.name.split(".")[0] not in ("bgtrain", "engine"):
            return None
        return f"no module {error.name}" if name is None or error.name != f"{module}.{name}" else f"no {name} in {module}"


def test_every_import_of_the_project_finds_what_it_names():
    files = [path for _, path in modules()] + sorted((ROOT / "scripts").glob("*.py")) + sorted((ROOT / "tests").glob("*.py"))
    wrong = [f"{path.relative_to(ROOT)}:{line}: {module}{f' import {name}' if name else ''}: {reason}"
             for path in files for line, module, name in project_names(path)
             if (reason := unresolved(module, name)) is not None]
    assert not wrong, "imports that name nothing:\n" + "\n".join(wrong)


def test_a_stale_import_is_found():
    assert unresolved("bgtrain", "bearoff") == "no bearoff in bgtrain"  # moved to bgtrain.values
    assert unresolved("bgtrain.values", "bearoff") is None
    assert unresolved("bgtrain.training.heldout", "split_dataset") is None
    assert unresolved("bgtrain.training.supervised", "nothing") == "no nothing in bgtrain.training.supervised"
    assert unresolved("bgtrain.nowhere", None) == "no module bgtrain.nowhere"


@pytest.mark.parametrize("source, module, expected", [
    ("bgtrain.values", "bgtrain.model.network", True),
    ("bgtrain.model", "bgtrain.values.evaluator", False),
    ("bgtrain.training", "bgtrain.distributed.selfplay", False),
])
def test_the_rule_itself(source, module, expected):
    """The check tells a downward import from an upward one (so the tests above can fail)."""
    assert (FLOORS[room_of(module)] < FLOORS[source]) is expected
