"""The front end's one build step: ES modules in `static/` joined into one file, offline.

The Explorer's front end is ES modules with explicit imports. anywidget takes one ES
module (`_esm`) and the report one `<script>`, so `bundle` joins the modules
that an entry module imports, in dependency order, each in its own scope::

    const __m_core = (() => {          // core.js: its code, then its exports
      function h(tag) { ... }
      return { h };
    })();
    const __m_list = (() => {          // list.js: its imports read earlier modules
      const { h } = __m_core;
      ...

The bundle then ends with `export default __m_main.default;` (`fmt="esm"`, for
anywidget: the entry's `export default { render }`) or runs as a classic script
(`fmt="script"`, for the report: the entry module does what it needs itself).

Only a small subset of the import/export syntax is read, one statement at the start of a
line (a statement may run over several lines up to its `;`)::

    import { a, b as c } from "./x.js";      // relative paths ending in .js only
    export function f(...) / export async function f / export class C
    export const x = ... / export let x = ...
    export { a, b as c };
    export default { render };              // the entry module only

Anything else starting with `import` or `export` (a default or namespace import, a
bare `import "./x.js"`, `export *`, `import(...)`) is a `BundleError` naming
the file and line, as are a missing file, an import of a name the other file does not
export, and an import cycle. No file can read another's names except through an import:
each module runs inside its own function.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import pathlib
import re
import tempfile
import threading
import time
from collections.abc import Callable

__all__ = ["BundleError", "Module", "parse_module", "module_order", "join", "bundle",
           "sources_stamp", "dev_file"]

_log = logging.getLogger(__name__)

STATIC = pathlib.Path(__file__).parent / "static"

_NAME = r"[A-Za-z_$][\w$]*"
_SPECS = rf"\{{\s*((?:{_NAME}(?:\s+as\s+{_NAME})?\s*,\s*)*(?:{_NAME}(?:\s+as\s+{_NAME})?)?\s*,?)\s*\}}"
_IMPORT = re.compile(rf'import\s*{_SPECS}\s*from\s*"(\.{{1,2}}/[\w./-]+\.js)"\s*;', re.S)
_EXPORT_DECL = re.compile(rf"export\s+((?:async\s+)?function\*?|class|const|let)\s+({_NAME})")
_EXPORT_LIST = re.compile(rf"export\s*{_SPECS}\s*;", re.S)
_EXPORT_DEFAULT = re.compile(rf"export\s+default\s*{_SPECS}\s*;", re.S)
_STATEMENT = re.compile(r"^[ \t]*(import|export)\b", re.M)


class BundleError(ValueError):
    """A front-end module the bundler cannot read, or modules it cannot order."""


@dataclasses.dataclass(frozen=True)
class Module:
    """One parsed module: its imports `(path, ((name, local), ...), line)`, its exports
    `((exported, local), ...)`, its default export's names, and its code with the
    import/export syntax taken out (same number of lines)."""

    path: str
    imports: tuple[tuple[str, tuple[tuple[str, str], ...], int], ...]
    exports: tuple[tuple[str, str], ...]
    default: tuple[tuple[str, str], ...]
    code: str


def _specs(text: str) -> tuple[tuple[str, str], ...]:
    out = []
    for part in text.split(","):
        words = part.split()
        if not words:
            continue
        out.append((words[0], words[-1]))  # "a" -> (a, a); "a as b" -> (a, b)
    return tuple(out)


def _resolve(importer: str, spec: str, where: str) -> str:
    path = (pathlib.PurePosixPath(importer).parent / spec).as_posix()
    parts: list[str] = []
    for p in path.split("/"):
        if p == "..":
            if not parts:
                raise BundleError(f"{where}: {spec!r} points outside passlab/views/static")
            parts.pop()
        elif p not in ("", "."):
            parts.append(p)
    return "/".join(parts)


def parse_module(path: str, source: str) -> Module:
    """Read the import/export statements of `source` (the file `path` under
    `static/`); raises `BundleError` with file and line for anything outside the
    subset described in this module's docstring."""
    imports: list[tuple[str, tuple[tuple[str, str], ...], int]] = []
    exports: list[tuple[str, str]] = []
    default: tuple[tuple[str, str], ...] = ()
    code = []
    pos = 0
    for m in _STATEMENT.finditer(source):
        if m.start() < pos:
            continue
        line = source.count("\n", 0, m.start()) + 1
        where = f"{path}:{line}"
        start = m.start() + len(m.group(0)) - len(m.group(1))
        code.append(source[pos:start])
        rest = source[start:]
        imp = _IMPORT.match(rest) if m.group(1) == "import" else None
        decl = _EXPORT_DECL.match(rest) if m.group(1) == "export" else None
        lst = _EXPORT_LIST.match(rest) if m.group(1) == "export" else None
        dflt = _EXPORT_DEFAULT.match(rest) if m.group(1) == "export" else None
        if imp:
            names = _specs(imp.group(1))
            imports.append((_resolve(path, imp.group(2), where), names, line))
            destructure = ", ".join(n if n == local else f"{n}: {local}" for n, local in names)
            text = f"const {{ {destructure} }} = @@{len(imports) - 1}@@;"
            end = start + imp.end()
        elif decl:
            exports.append((decl.group(2), decl.group(2)))
            text = ""
            end = start + len(rest) - len(rest[len("export"):].lstrip())
        elif dflt:
            default = tuple((alias, local) for local, alias in _specs(dflt.group(1)))
            text, end = "", start + dflt.end()
        elif lst:
            exports.extend((alias, local) for local, alias in _specs(lst.group(1)))
            text, end = "", start + lst.end()
        else:
            first = rest.split("\n", 1)[0].strip()
            raise BundleError(
                f"{where}: {first!r} is not in the bundler's subset of import/export "
                "(import { a, b as c } from \"./x.js\"; export function/class/const/let NAME; "
                "export { a, b }; export default { a } in the entry); see passlab/views/_bundle.py")
        # keep the line count, so a browser's line numbers still point into the file
        code.append(text + "\n" * source.count("\n", start, end))
        pos = end
    code.append(source[pos:])
    seen: dict[str, str] = {}
    for exported, _local in exports:
        if exported in seen:
            raise BundleError(f"{path}: {exported!r} is exported twice")
        seen[exported] = exported
    return Module(path, tuple(imports), tuple(exports), tuple(default), "".join(code))


def _read(path: str, root: pathlib.Path, where: str) -> str:
    file = root / path
    if not file.is_file():
        raise BundleError(f"{where}: no module {path!r} (looked for {file})")
    return file.read_text("utf-8")


def module_order(entries: tuple[str, ...], read) -> list[Module]:
    """The modules `entries` import, directly or not, each after the modules it imports
    (`read(path, where)` gives a module's source). An import cycle, a missing module or
    a name a module does not export is a `BundleError`."""
    done: dict[str, Module] = {}
    order: list[Module] = []
    stack: list[str] = []

    def visit(path: str, where: str) -> None:
        if path in done:
            return
        if path in stack:
            cycle = " -> ".join(stack[stack.index(path):] + [path])
            raise BundleError(f"{where}: import cycle {cycle}; the bundle needs an order")
        stack.append(path)
        mod = parse_module(path, read(path, where))
        for dep, names, line in mod.imports:
            visit(dep, f"{path}:{line}")
            have = {exported for exported, _ in done[dep].exports}
            for name, _local in names:
                if name not in have:
                    raise BundleError(f"{path}:{line}: {dep} exports no {name!r} "
                                      f"(it exports {', '.join(sorted(have)) or 'nothing'})")
        stack.pop()
        done[path] = mod
        order.append(mod)

    for entry in entries:
        visit(entry, "entry")
    return order


def _var(path: str) -> str:
    return "__m_" + re.sub(r"\W", "_", path[:-3] if path.endswith(".js") else path)


def join(order: list[Module], fmt: str = "esm") -> str:
    """The bundle of modules already in order (see `bundle`)."""
    names: dict[str, str] = {}
    for mod in order:
        var = _var(mod.path)
        if var in names.values():
            raise BundleError(f"{mod.path}: its scope name {var} is another module's too")
        names[mod.path] = var
    out = [f"/* passlab front end: {len(order)} modules (passlab/views/_bundle.py) */"]
    if fmt == "script":
        out.append('(() => {\n"use strict";')
    for mod in order:
        deps = [names[path] for path, _names, _line in mod.imports]

        def dep(m: re.Match[str], deps: list[str] = deps) -> str:
            return deps[int(m.group(1))]

        code = re.sub(r"@@(\d+)@@", dep, mod.code)
        ret = [e if e == local else f"{e}: {local}" for e, local in mod.exports]
        if mod.default:
            inner = ", ".join(e if e == local else f"{e}: {local}" for e, local in mod.default)
            ret.append(f"default: {{ {inner} }}")
        out.append(f"/* --- {mod.path} --- */\nconst {names[mod.path]} = (() => {{\n"
                   f"{code.rstrip()}\nreturn {{ {', '.join(ret)} }};\n}})();")
    last = order[-1]
    if fmt == "esm":
        if not last.default:
            raise BundleError(f"{last.path}: the entry of an ES-module bundle needs "
                              "export default { ... }")
        out.append(f"export default {names[last.path]}.default;")
    if fmt == "script":
        out.append("})();")
    return "\n".join(out) + "\n"


def sources_stamp(root: pathlib.Path = STATIC) -> tuple[tuple[str, int], ...]:
    """The front end's files with their modification times (a cache key: a changed file
    makes a new bundle)."""
    return tuple((str(p.relative_to(root)), p.stat().st_mtime_ns)
                 for p in sorted(root.rglob("*")) if p.suffix in (".js", ".css")
                 and "widgets" not in p.relative_to(root).parts)


@functools.lru_cache(maxsize=16)
def _bundle(entries: tuple[str, ...], fmt: str, root: str, stamp: object) -> str:
    base = pathlib.Path(root)
    if all(e.endswith(".css") for e in entries):
        return "\n".join(f"/* --- {e} --- */\n" + _read(e, base, "entry") for e in entries)
    order = module_order(entries, lambda path, where: _read(path, base, where))
    return join(order, fmt)


def bundle(entries: tuple[str, ...], fmt: str = "esm", root: pathlib.Path = STATIC,
           fresh: bool = False) -> str:
    """One file from the front end's sources (paths under `static/`).

    JS entries: the modules they import, in order, each in its own scope; `fmt="esm"`
    ends with the last entry's `export default` (anywidget's `_esm`), `"script"`
    is a classic script. CSS entries: the files joined in the order given. Cached; with
    `fresh` the cache is keyed on the files' modification times too (development).
    """
    if fmt not in ("esm", "script"):
        raise ValueError(f"fmt must be 'esm' or 'script', not {fmt!r}")
    return _bundle(tuple(entries), fmt, str(root), sources_stamp(root) if fresh else None)


#: Where ``PASSLAB_DEV=1`` keeps its bundles (outside site-packages: anywidget watches
#: only files there).
DEV_DIR = pathlib.Path(tempfile.gettempdir()) / f"passlab-dev-{os.getuid() if hasattr(os, 'getuid') else 0}"


def dev_file(name: str, build: Callable[[], str], every: float = 0.5,
             root: pathlib.Path = STATIC, out: pathlib.Path | None = None) -> pathlib.Path:
    """`build()` written to `DEV_DIR/name`, and rewritten whenever a front-end source
    under `root` changes (a daemon thread polls the files' modification times every
    `every` seconds; `out` instead of `DEV_DIR`), so anywidget, given the path as `_esm`, live-reloads the widget. A
    source that does not bundle is logged and the last good file kept."""
    folder = out or DEV_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(build(), "utf-8")
    thread = f"passlab-dev-{path}"
    if any(t.name == thread for t in threading.enumerate()):
        return path

    def watch() -> None:
        stamp = sources_stamp(root)
        while True:
            time.sleep(every)
            now = sources_stamp(root)
            if now == stamp:
                continue
            stamp = now
            try:
                text = build()
            except BundleError as exc:
                _log.error("passlab dev bundle %s not rebuilt: %s", name, exc)
                continue
            path.write_text(text, "utf-8")

    threading.Thread(target=watch, name=thread, daemon=True).start()
    return path
