"""The package's imports run one way along the flow (docs/architecture.md): no module imports
a package above it, and no two modules import each other, directly or in a loop."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "skyeval"
# Lowest first: a unit may import only units of a lower rank (and modules of its own).
RANKS = {
    "errors": 0, "paths": 0,
    "templates": 1, "reasoning": 1, "results": 1,
    "metrics": 2, "scorers": 2,
    "backends": 3,
    "tools": 3.5,  # the turn loop: above the backends and the sandbox, below the envs that use it
    "envs": 4, "grading": 4,
    "config": 5,
    "report": 6, "run": 6, "reward": 6,
    "curation": 7,
    "cli": 8, "audit": 9,  # `python -m skyeval.audit`: the cli's audit command under its old name
}


def imports() -> dict[str, set[str]]:
    """module -> the skyeval modules it imports (anywhere in the file, TYPE_CHECKING included)."""
    modules = {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
               for p in PACKAGE.rglob("*.py")}
    found = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("skyeval"):
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    targets.add(sub if sub in modules else node.module)
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names if a.name.startswith("skyeval.")}
        found[name] = {t for t in targets if t in modules and t != name}
    return found


def unit(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def test_every_import_runs_down_the_flow():
    wrong = [f"{a} -> {b}" for a, targets in imports().items() if a != "skyeval" for b in targets
             if unit(b) != unit(a) and RANKS[unit(b)] >= RANKS[unit(a)]]
    assert not wrong, wrong


def test_no_module_imports_itself_through_others():
    graph = imports()
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycles.append(trail[trail.index(target):] + [target])
            elif target not in state:
                visit(target, trail + [target])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, cycles
