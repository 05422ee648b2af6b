"""The layout keeps its promise: imports run one way, by a declared layer order, with no
cycle, counting every import statement wherever it stands (inside functions too)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "passlab"

#: Bottom to top. A module may import its own layer's modules (without a cycle) and
#: any lower layer, never a higher one. ``passlab/__init__.py`` is the top: the public
#: names, and the wiring of conveniences that reach upwards.
LAYERS: list[tuple[str, ...]] = [
    ("passlab.errors",),
    ("passlab._render", "passlab._sequence"),
    ("passlab._tvm",),
    ("passlab.models",),
    ("passlab.pipeline",),
    ("passlab.recording",),
    ("passlab.backend", "passlab.io"),
    ("passlab.analysis",),
    ("passlab.research",),
    ("passlab.views",),
    ("passlab.cli",),
    ("passlab",),
]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def resolve(name: str, known: dict[str, Path]) -> str | None:
    """The passlab module an imported dotted name lands in (``a.b.c`` where ``c`` is a
    function lands in ``a.b``)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
            # ``from pkg import name`` imports pkg too, unless every name is a submodule
            if all(f"{base}.{a.name}" in known for a in node.names):
                targets.remove(base)
        else:
            continue
        for t in targets:
            hit = resolve(t, known)
            if hit is not None and hit != name:
                found.add(hit)
    return found


def layer_of(name: str) -> int:
    best, level = -1, -1
    for i, group in enumerate(LAYERS):
        for prefix in group:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, level = len(prefix), i
    assert level >= 0, f"{name} is in no declared layer: add it to LAYERS"
    return level


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def test_every_module_has_a_layer():
    for name in modules():
        layer_of(name)


def test_no_import_runs_upwards():
    wrong = [f"{a} (layer {layer_of(a)}) imports {b} (layer {layer_of(b)})"
             for a, targets in graph().items() for b in sorted(targets)
             if layer_of(b) > layer_of(a)]
    assert wrong == []


def test_no_import_cycle():
    g = graph()
    cycles, state, stack = [], {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(g[n]):
            if state.get(m) == 1:
                cycles.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(g):
        if n not in state:
            visit(n)
    assert cycles == []


def test_top_level_stays_small():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 10, top


def test_import_graph_reads_function_local_imports():
    g = graph()
    # cli imports the report inside a function: the graph must see it
    assert "passlab.views.report" in g["passlab.cli"]
