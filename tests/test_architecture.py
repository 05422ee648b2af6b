"""The layout keeps its promise: imports run one way, by a declared layer order, with no
cycle, counting every import statement wherever it stands (inside functions too)."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from passlab.views._bundle import BundleError, join, module_order, parse_module

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "passlab"

#: Bottom to top. A module may import its own layer's modules (without a cycle) and
#: any lower layer, never a higher one. ``passlab/__init__.py`` is the top: the public
#: names, and the wiring of conveniences that reach upwards.
LAYERS: list[tuple[str, ...]] = [
    ("passlab.errors",),
    ("passlab._render", "passlab._sequence", "passlab._progress"),
    ("passlab._tvm",),
    ("passlab.models",),
    ("passlab.pipeline",),
    ("passlab.recording",),
    ("passlab.backend", "passlab.io"),
    ("passlab.analysis",),
    ("passlab.research",),
    ("passlab.views",),
    ("passlab.cli", "passlab.autorecord"),
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


# ------------------------------------------------------------------ views compute nothing
#: What a view must not reach into: printing and IR walking live behind analyses
#: (``passlab.analysis.ir_text``, ``passlab.analysis.graph.kernel_flops``, ...) that
#: every face (the Explorer, the report) calls, so that both show the same thing.
VIEW_FORBIDDEN = ("passlab._tvm.printing", "passlab._tvm.walk", "passlab._tvm.ir",
                  "passlab._tvm.ir_calls", "passlab._tvm.ir_types", "passlab._tvm.tir",
                  "passlab._tvm.tensors")
#: ``_tvm.<name>`` functions that walk a function's body (through ``from passlab import _tvm``).
VIEW_FORBIDDEN_CALLS = frozenset({"called_functions", "count_bindings", "function_hash",
                                  "structural_equal"})


def reaches_into_tvm(name: str, source: str, known: dict[str, Path]) -> list[str]:
    """What module ``name`` (of source ``source``) takes from ``_tvm`` printing or IR
    walking: imports of those modules, and ``_tvm.<submodule or walker>`` uses."""
    tree = ast.parse(source)
    wrong = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            base = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            for alias in node.names:
                for full in filter(None, (f"{base}.{alias.name}" if base else alias.name, base)):
                    hit = resolve(full, known)
                    if hit in VIEW_FORBIDDEN and f"{name} imports {hit}" not in wrong:
                        wrong.append(f"{name} imports {hit}")
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "_tvm" and (
                  node.attr in VIEW_FORBIDDEN_CALLS
                  or f"passlab._tvm.{node.attr}" in VIEW_FORBIDDEN)):
            wrong.append(f"{name} uses _tvm.{node.attr}")
    return wrong


def test_views_neither_print_nor_walk_ir():
    known = modules()
    wrong = [w for name, path in sorted(known.items()) if name.startswith("passlab.views")
             for w in reaches_into_tvm(name, path.read_text(), known)]
    assert wrong == []


def test_the_views_check_sees_each_way_in():
    known = modules()
    source = ("from passlab._tvm import printing\n"
              "from passlab._tvm.tir import flops\n"
              "def f(m):\n    from passlab import _tvm\n    return _tvm.called_functions(m)\n"
              "import passlab._tvm.walk\n"
              "from passlab import _tvm\nx = _tvm.functions\n")  # a listing is not a walk
    assert sorted(reaches_into_tvm("v", source, known)) == [
        "v imports passlab._tvm.printing", "v imports passlab._tvm.tir",
        "v imports passlab._tvm.walk", "v uses _tvm.called_functions"]


# --------------------------------------------------------------- the front end's files
STATIC = PACKAGE / "views" / "static"
#: Top-level declarations of a JS file (the files indent everything nested).
_JS_DECL = re.compile(r"^(?:export\s+)?(?:async\s+)?(?:function\*?|const|let|var|class)\s+"
                      r"([A-Za-z_$][\w$]*)", re.M)
_JS_ANY_DECL = re.compile(r"\b(?:function\*?|const|let|var|class)\s+([A-Za-z_$][\w$]*)")


def _js_code(source: str) -> str:
    """JS source without comments and string contents (names in them are not reads)."""
    source = re.sub(r"/\*.*?\*/", " ", source, flags=re.S)
    source = re.sub(r"(?<![:\\])//[^\n]*", " ", source)
    source = re.sub(r"`(?:\\.|[^`\\])*`", "``", source, flags=re.S)
    source = re.sub(r"'(?:\\.|[^'\\\n])*'", "''", source)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', source)


def _js_imports(name: str, text: str) -> set[str]:
    """The local names ``name``'s import statements bind (the bundler's own reading)."""
    return {local for _path, names, _line in parse_module(name, text).imports
            for _name, local in names}


def shared_js_globals(files: dict[str, str]) -> list[str]:
    """``"a.js: NAME (read by b.js, ...)"`` for each top-level name of one file that
    another file reads without declaring or importing it itself."""
    code = {name: _js_code(text) for name, text in files.items()}
    own = {name: set(_JS_ANY_DECL.findall(text)) | _js_imports(name, files[name])
           for name, text in code.items()}
    out = []
    for name, text in sorted(code.items()):
        for glob in sorted(set(_JS_DECL.findall(text))):
            used = re.compile(r"(?<![\w$.])" + re.escape(glob) + r"(?![\w$])")
            readers = [other for other, body in sorted(code.items())
                       if other != name and glob not in own[other] and used.search(body)]
            if readers:
                out.append(f"{name}: {glob} (read by {', '.join(readers)})")
    return out


def test_the_js_globals_check_sees_a_shared_global():
    files = {"a.js": "const PANES = {};\nfunction h(tag) {\n  return tag; // h\n}\n",
             "b.js": 'PANES.x = h("div");\nconst s = "PANES";\n',
             "c.js": "function h(t) { return t; }\nh(1);\n",  # its own h: no read of a's
             "d.js": 'import { h } from "./a.js";\nh(PANES);\n'}  # imports h, not PANES
    assert shared_js_globals(files) == [
        "a.js: PANES (read by b.js, d.js)", "a.js: h (read by b.js)", "c.js: h (read by b.js)"]


def test_no_js_file_defines_a_global_another_file_reads():
    # passlab's own front end; static/widgets/ holds vendored third-party files
    files = {p.relative_to(STATIC).as_posix(): p.read_text("utf-8")
             for p in sorted(STATIC.rglob("*.js")) if "widgets" not in p.relative_to(STATIC).parts}
    assert "explorer/graph/pane.js" in files
    assert shared_js_globals(files) == []


# ------------------------------------------------------------------------- the bundler
def _modules(files: dict[str, str]):
    def read(path, where):
        if path not in files:
            raise BundleError(f"{where}: no module {path!r}")
        return files[path]
    return read


def test_the_bundle_orders_modules_by_their_imports_and_scopes_each():
    files = {"main.js": 'import { b } from "./x/b.js";\nimport { a as first } from "./a.js";\n'
                        "export function render() { return first + b; }\n"
                        "export default { render };\n",
             "a.js": "const hidden = 1;\nexport const a = hidden;\n",
             "x/b.js": 'import { a } from "../a.js";\nconst hidden = 2;\n'
                       "export let b = a + hidden;\nexport { hidden as two };\n"}
    order = module_order(("main.js",), _modules(files))
    assert [m.path for m in order] == ["a.js", "x/b.js", "main.js"]
    assert order[1].exports == (("b", "b"), ("two", "hidden"))
    assert order[2].imports == (("x/b.js", (("b", "b"),), 1), ("a.js", (("a", "first"),), 2))
    text = join(order)
    assert text.endswith("export default __m_main.default;\n")
    assert "const { a: first } = __m_a;" in text
    assert "return { b, two: hidden };" in text
    # each module keeps its line count (browser line numbers point into the file)
    assert all(m.code.count("\n") == files[m.path].count("\n") for m in order)
    js = subprocess.run(["node", "--input-type=module", "-e",
                         text.replace("export default", "const d =") + "console.log(d.render());"],
                        capture_output=True, text=True, check=False) if shutil.which("node") else None
    if js is not None:
        assert (js.returncode, js.stdout) == (0, "4\n"), js.stderr  # two `hidden`s, no clash


def test_the_bundle_refuses_a_cycle_a_missing_file_and_other_syntax():
    cyc = {"a.js": 'import { b } from "./b.js";\nexport const a = 1;\n',
           "b.js": '\nimport { a } from "./a.js";\nexport const b = 2;\n'}
    with pytest.raises(BundleError, match=r"^b.js:2: import cycle a.js -> b.js -> a.js"):
        module_order(("a.js",), _modules(cyc))
    with pytest.raises(BundleError, match=r"^a.js:1: no module 'b.js'"):
        module_order(("a.js",), _modules({"a.js": cyc["a.js"]}))
    with pytest.raises(BundleError, match=r"^a.js:1: b.js exports no 'c' \(it exports b\)"):
        module_order(("a.js",), _modules({"a.js": 'import { c } from "./b.js";\n',
                                          "b.js": "export const b = 1;\n"}))
    for line in ['import * as x from "./b.js";', 'import x from "./b.js";', 'import "./b.js";',
                 'export * from "./b.js";', 'import { a } from "b";', "export default render;",
                 "  export var v = 1;"]:
        with pytest.raises(BundleError, match=r"^m.js:3: .* is not in the bundler's subset"):
            parse_module("m.js", "// m\nconst x = 1;\n" + line + "\n")
    with pytest.raises(BundleError, match="needs export default"):
        join(module_order(("b.js",), _modules({"b.js": "export const b = 1;\n"})))


def test_the_explorer_bundle_is_one_es_module_ending_in_its_render():
    from passlab.views.explorer import JS_PARTS, bundle

    text = bundle(JS_PARTS)
    assert text.endswith("export default __m_explorer_main.default;\n")
    assert text.count("\nexport ") == 1 and "\nimport " not in text
    assert bundle(JS_PARTS) is text  # cached: built once per process
    if shutil.which("node"):
        js = subprocess.run(["node", "--input-type=module", "--check"], input=text,
                            capture_output=True, text=True, check=False)
        assert js.returncode == 0, js.stderr


def test_dev_mode_rewrites_the_bundle_when_a_source_changes(tmp_path):
    import time

    from passlab.views._bundle import bundle, dev_file

    src = tmp_path / "src"
    src.mkdir()
    (src / "main.js").write_text("export function render() {}\nexport default { render };\n")
    build = lambda: bundle(("main.js",), root=src, fresh=True)  # noqa: E731
    path = dev_file("main.js", build, every=0.05, root=src, out=tmp_path / "dev")
    assert path == tmp_path / "dev" / "main.js" and "render() {}" in path.read_text()
    time.sleep(0.1)
    (src / "main.js").write_text("export function render() { return 2; }\n"
                                 "export default { render };\n")
    for _ in range(100):
        if "return 2" in path.read_text():
            break
        time.sleep(0.05)
    assert "return 2" in path.read_text()
