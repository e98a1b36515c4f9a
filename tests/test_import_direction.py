"""Imports flow one way: scheduler_core <- api <- dashboard <- config, and inside
api store <- cluster <- wire <- rest; scheduler_core has no import circle.

Read from the source with `ast`, every import counted: module level,
inside functions and under `TYPE_CHECKING` alike, since a type-only import
still ties two modules together for a reader.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("scheduler_core", "api", "dashboard", "loadgen", "config")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts or path.name.endswith(("_pb2.py", "_pb2_grpc.py")):
                continue
            found[_module_name(path)] = path
    return found


SOURCES = _sources()


def _imports(module: str) -> Iterator[str]:
    """Every project module `module` imports (a `from pkg import mod` names `pkg.mod`)."""
    tree = ast.parse(SOURCES[module].read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                yield candidate if candidate in SOURCES else node.module


def _project_imports(module: str) -> set[str]:
    return {name for name in _imports(module) if name.split(".")[0] in PACKAGES}


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


# (importer's package, packages it must never import)
FORBIDDEN = [
    ("scheduler_core", ("api", "dashboard", "loadgen", "config", "django")),
    ("api", ("dashboard", "loadgen", "config")),
    ("dashboard", ("loadgen", "config")),
    ("dashboard.snapshot_index", ("api", "dashboard", "django")),
    ("api.store", ("api.cluster", "api.wire", "api.rest")),
    ("api.cluster", ("api.wire", "api.rest")),
    ("api.wire", ("api.rest",)),
]


@pytest.mark.parametrize(("importer", "forbidden"), FORBIDDEN)
def test_a_layer_never_imports_the_layers_above_it(importer: str, forbidden: tuple[str, ...]):
    offences = sorted(
        f"{module} imports {target}"
        for module in SOURCES
        if _under(module, importer)
        for target in (
            {n for n in _imports(module)} if "django" in forbidden else _project_imports(module)
        )
        if any(_under(target, bad) for bad in forbidden)
    )
    assert offences == []


def test_the_scan_sees_the_imports_it_is_meant_to_police():
    # Guards the test above against passing because it reads nothing.
    assert "api.store.models" in _project_imports("api.store.services")
    assert "scheduler_core.nodes" in _project_imports("scheduler_core.leaf")  # TYPE_CHECKING


def test_scheduler_core_has_no_import_circle():
    graph = {
        module: {t for t in _project_imports(module) if _under(t, "scheduler_core")}
        for module in SOURCES
        if _under(module, "scheduler_core")
    }
    # A package's __init__ re-exports its modules; that is not a circle.
    graph["scheduler_core"] = set()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt) :] + [nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert cycles == []
