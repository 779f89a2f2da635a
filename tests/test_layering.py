"""The layout holds: every room of ``bgtrain`` and ``engine`` stands on a floor, and imports (at the top of a
module or inside a function alike) only go down to lower floors, so there is no import circle between
rooms. The floors are the map of ``docs/architecture.md``; a new room must be placed here."""

from __future__ import annotations

import ast
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


@pytest.mark.parametrize("source, module, expected", [
    ("bgtrain.values", "bgtrain.model.network", True),
    ("bgtrain.model", "bgtrain.values.evaluator", False),
    ("bgtrain.training", "bgtrain.distributed.selfplay", False),
])
def test_the_rule_itself(source, module, expected):
    """The check tells a downward import from an upward one (so the tests above can fail)."""
    assert (FLOORS[room_of(module)] < FLOORS[source]) is expected
