"""LLVM's own passes inside TVM 0.27's `llvm` code generator: its options, and the IR it
prints after each pass that changed something, read as it streams.

TVM passes LLVM command-line options through the target (`{"kind": "llvm", "cl-opt":
[...]}`), each as `-name:type=value` with type `bool`, `int`, `uint` or
`string` (`-name` alone is `-name:bool=true`). The C++ side
(`LLVMTargetInfo::ParseOptionString`) casts LLVM's option object to the type written
there, so a value of another type is undefined behaviour: regex-valued options
(`-pass-remarks`) end in `std::bad_alloc`, list options (`-print-after`) likewise.
LLVM options are process-global; TVM sets them when its LLVM target object is made and
puts the old values back when it is destroyed.

`-print-changed` makes LLVM print the IR of a function (or of the whole module, for a
module pass) after every pass that changed it, on file descriptor 2, with headers::

    *** IR Dump At Start ***                                  (the module before any pass)
    *** IR Dump After InstCombinePass on fused_add_compute_ ***
    *** IR Dump After LoopRotatePass on loop %for_body in function f ***
    *** IR Dump After PostOrderFunctionAttrsPass on (f) ***   (a call-graph SCC)
    *** IR Dump After GlobalOptPass on [module] ***
    *** IR Dump After SROAPass on f omitted because no change ***
    *** IR Deleted After GlobalDCEPass on f ***
    *** IR Pass PassManager<Function> on f ignored ***

`-print-loop-func-scope` makes a loop pass print its whole function, and
`-print-before-changed` makes LLVM print, before each such dump, the text it compared it with
(`*** IR Dump Before <Pass> on <target> ***`): the function as it was just before the
pass. Without it the text before would have to be the function's previous printed change,
which misses what LLVM changed without reporting it (a loop pass that fully unrolled or
deleted its loop prints only "IR Pass ... invalidated") and attribute or metadata
numbers that moved when another function changed. A built module
remembers its target (the `tvm_target` module flag) and applies its options again
whenever LLVM touches it later (assembly text, the JIT at the first call): so the dump is
made by a second code generation of the same lowered module, whose result is dropped, and
the executable comes from the build's own, option-free code generation.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from passlab._tvm import logs
from passlab.errors import LlvmOptionError

__all__ = ["check_options", "codegen_target", "unknown_options", "DumpReader", "LlvmDump",
           "record_codegen", "split_functions", "function_stats", "vector_types",
           "module_target", "compile_ll", "llvm_version", "FunctionStats", "kernel_modules",
           "only_functions", "PRINT_OPTIONS", "MODULE", "LLVM_STAGE", "KernelRecording",
           "record_kernels", "worker_count", "WORKERS_ENV", "MAX_WORKERS", "Workers",
           "started_workers"]

#: What passlab adds to a build's options to record LLVM's passes.
PRINT_OPTIONS = ("-print-changed:bool=true", "-print-loop-func-scope:bool=true",
                 "-print-before-changed:bool=true")
#: The pseudo-function that stands for a module's text outside its function definitions
#: (globals, declarations, attribute groups, metadata) in a module pass's dump.
MODULE = "[module]"
#: The stage (and level) of a trace's LLVM steps.
LLVM_STAGE = "llvm"

_TYPES = ("bool", "int", "uint", "string")
_OPTION = re.compile(r"^(--?)([A-Za-z0-9][\w.-]*)(?::([A-Za-z]*))?(?:=(.*))?$", re.S)
_BOOLS = {"true": "true", "1": "true", "false": "false", "0": "false"}

#: Options TVM's cl-opt cannot set without undefined behaviour (their LLVM type is not
#: one of bool/int/uint/string), and the printing options passlab drives itself.
REFUSED = {
    "pass-remarks": "a regex option: TVM casts it to a string option and the build dies "
                    "with std::bad_alloc (see passlab.analysis.vectorization for what the "
                    "dump tells about vectorization instead)",
    "pass-remarks-missed": "a regex option (std::bad_alloc in TVM 0.27's cl-opt)",
    "pass-remarks-analysis": "a regex option (std::bad_alloc in TVM 0.27's cl-opt)",
    "pass-remarks-output": "a tool option of opt/clang, not an option of LLVM's library",
    "pass-remarks-filter": "a tool option of opt/clang, not an option of LLVM's library",
    "print-after": "a list option: TVM 0.27's cl-opt sets only bool, int, uint and string",
    "print-before": "a list option: TVM 0.27's cl-opt sets only bool, int, uint and string",
    "filter-print-funcs": "a list option: TVM 0.27's cl-opt sets only scalar options",
    "filter-passes": "a list option: TVM 0.27's cl-opt sets only scalar options",
    "debug-only": "a list option (and only in LLVM builds with assertions)",
    "print-changed": "passlab prints LLVM's changes itself: build with llvm_passes=True",
    "print-after-all": "its output would mix with the dump passlab reads: build with "
                       "llvm_passes=True to record every pass that changed the IR",
    "print-before-all": "its output would mix with the dump passlab reads: build with "
                        "llvm_passes=True",
    "print-module-scope": "passlab chooses how LLVM prints its passes: build with "
                          "llvm_passes=True",
    "print-loop-func-scope": "passlab sets it itself when it records LLVM's passes",
    "print-before-changed": "passlab sets it itself when it records LLVM's passes",
    "ir-dump-directory": "LLVM would print into files instead of the stream passlab reads",
}


def check_options(options: Sequence[str]) -> tuple[str, ...]:
    """`options` in the form TVM 0.27 parses, each typed: `-name` becomes
    `-name:bool=true`, `-name=false` `-name:bool=false`. Raises
    `passlab.errors.LlvmOptionError` naming the first bad one and what would be
    right (no TVM call: `unknown_options` asks LLVM which names it knows).

    Examples
    --------
    >>> from passlab._tvm.llvm import check_options
    >>> check_options(["-vectorize-loops:bool=false", "-unroll-threshold:int=0", "-x"])
    ('-vectorize-loops:bool=false', '-unroll-threshold:int=0', '-x:bool=true')
    """
    if isinstance(options, str):
        options = [options]
    out = []
    for opt in options:
        if not isinstance(opt, str):
            raise LlvmOptionError(f"an LLVM option is a string such as "
                                  f"'-vectorize-loops:bool=false', not {opt!r}")
        m = _OPTION.match(opt.strip())
        if m is None:
            raise LlvmOptionError(
                f"LLVM option {opt!r} is not of the form TVM reads: -name, -name:bool=true, "
                "-name:int=N, -name:uint=N or -name:string=TEXT (e.g. "
                "'-vectorize-loops:bool=false', '-unroll-threshold:int=0')")
        _, name, kind, value = m.groups()
        if name in REFUSED:
            raise LlvmOptionError(f"LLVM option -{name} cannot be set through TVM 0.27's "
                                  f"cl-opt: {REFUSED[name]}")
        if kind is not None and kind not in _TYPES:
            raise LlvmOptionError(f"LLVM option {opt!r}: type {kind!r} is not one TVM reads; "
                                  f"the types are {', '.join(_TYPES)} (-{name}:int=4)")
        if kind is None:
            if value is None:
                kind, value = "bool", "true"
            elif value.lower() in _BOOLS:
                kind, value = "bool", _BOOLS[value.lower()]
            else:
                raise LlvmOptionError(
                    f"LLVM option {opt!r}: TVM reads an untyped value as true or false, and "
                    f"{value!r} is neither; give the option's own type: -{name}:int={value}, "
                    f"-{name}:uint={value} or -{name}:string={value}")
        if value is None:
            if kind != "bool":
                raise LlvmOptionError(f"LLVM option {opt!r} needs a value: -{name}:{kind}=...")
            value = "true"
        if kind == "bool":
            if value.lower() not in _BOOLS:
                raise LlvmOptionError(f"LLVM option {opt!r}: a bool is true or false, not "
                                      f"{value!r}")
            value = _BOOLS[value.lower()]
        elif kind in ("int", "uint"):
            if not re.fullmatch(r"[-+]?\d+", value.strip()) or (
                    kind == "uint" and value.strip().startswith("-")):
                raise LlvmOptionError(f"LLVM option {opt!r}: {value!r} is not an "
                                      f"{'unsigned ' if kind == 'uint' else ''}integer")
            number = int(value)
            lo, hi = (-2**31, 2**31 - 1) if kind == "int" else (0, 2**32 - 1)
            if not lo <= number <= hi:
                raise LlvmOptionError(f"LLVM option {opt!r}: {number} is outside the range "
                                      f"of an LLVM {kind} ({lo}..{hi})")
            value = str(number)
        elif "," in value:  # TVM's target string joins options with commas
            raise LlvmOptionError(f"LLVM option {opt!r}: a string value cannot hold a comma "
                                  "(TVM joins a target's options with commas)")
        out.append(f"-{name}:{kind}={value}")
    return tuple(out)


def option_name(option: str) -> str:
    """The name of a typed option: `-vectorize-loops:bool=false` -> `vectorize-loops`."""
    return option.lstrip("-").split(":", 1)[0].split("=", 1)[0]


def codegen_target(tgt: Any, options: Sequence[str]) -> Any:
    """`tgt` (a `tvm.target.Target` of kind llvm, or with an llvm host) with
    `options` added to its (its host's) `cl-opt`; an option the target already sets is
    replaced."""
    import tvm

    if not options:
        return tgt
    if tgt.kind.name != "llvm" and tgt.host is not None:
        return tgt.with_host(codegen_target(tgt.host, options))
    config = dict(tgt.export())
    names = {option_name(o) for o in options}
    kept = [str(o) for o in config.get("cl-opt", ()) if option_name(str(o)) not in names]
    config["cl-opt"] = [*kept, *options]
    return tvm.target.Target(config)


def llvm_version() -> int:
    """The major version of the LLVM inside TVM (22 in apache-tvm 0.27)."""
    import tvm

    return int(tvm.target.codegen.llvm_version_major())


def unknown_options(tgt: Any) -> tuple[str, ...]:
    """The names in `tgt`'s `cl-opt` that LLVM does not know (TVM would ignore them
    with a log line). Parses the target's LLVM options without applying them."""
    import tvm

    said: list[bytes] = []
    with _fd2_to(said.append):
        tvm.target.codegen.llvm_get_cpu_archlist(tgt)
    text = b"".join(said).decode("utf-8", "replace")
    return tuple(re.findall(r'"([^"]+)" is not an LLVM option', text))


# ---------------------------------------------------------------------- reading dumps
@dataclass(frozen=True)
class LlvmDump:
    """One pass that changed the IR, as LLVM printed it: `pass_name` ("InstCombinePass"),
    `target` (what it ran on, as printed: a function, "loop %x in function f", "(f, g)",
    "[module]"), `scope` ("function", "loop", "cgscc" or "module"), `changes`: the
    functions whose text differs, each `(symbol, before, after)` ("" before for a new
    function, "" after for a deleted one; `MODULE` for the module's text outside its
    functions), and `skipped`: how many pass runs printed "omitted because no change"
    since the previous changed one (folded into this step)."""

    pass_name: str
    target: str
    scope: str
    changes: tuple[tuple[str, str, str], ...]
    skipped: int = 0


_HEADER = re.compile(
    r"^\*\*\* IR (Dump At Start|Dump Before|Dump After|Deleted After|Pass)(?: (.*?))? \*\*\*$")
_AFTER = re.compile(r"^(.+?) on (.+?)( omitted because no change| filtered out)?$")
_DEFINE = re.compile(r'^define\b[^@]*@"?([\w.$-]+)"?\(')
# TVM's own log lines ("[18:51:39] /project/src/...cc:246: Error: ..."): never IR
_TVM_LOG = re.compile(r"^\[\d\d:\d\d:\d\d\] \S+:\d+: ")


def split_functions(lines: Sequence[str]) -> tuple[dict[str, str], str]:
    """The function definitions in printed LLVM IR, `{symbol: text}` (each with its
    `; Function Attrs:` comment line), and the rest of the text (globals, declarations,
    attribute groups, metadata) with blank lines dropped."""
    funcs: dict[str, str] = {}
    rest: list[str] = []
    current: str | None = None
    body: list[str] = []
    pending: list[str] = []
    for line in lines:
        if current is not None:
            body.append(line)
            if line == "}":
                funcs[current] = "\n".join(body)
                current, body = None, []
            continue
        m = _DEFINE.match(line)
        if m is not None:
            current, body, pending = m.group(1), [*pending, line], []
        elif line.startswith("; Function Attrs:"):
            rest.extend(pending)
            pending = [line]
        else:
            rest.extend(pending)
            pending = []
            if line.strip():
                rest.append(line)
    if current is not None:  # an unterminated definition (a cut dump): keep what came
        funcs[current] = "\n".join(body)
    rest.extend(pending)
    return funcs, "\n".join(rest)


def _scope(target: str) -> tuple[str, tuple[str, ...]]:
    """(scope, the functions it names) of a header's target."""
    if target == "[module]":
        return "module", ()
    if target.startswith("loop ") and " in function " in target:
        return "loop", (target.rsplit(" in function ", 1)[1],)
    if target.startswith("(") and target.endswith(")"):
        return "cgscc", tuple(t.strip() for t in target[1:-1].split(",") if t.strip())
    return "function", (target,)


class DumpReader:
    """Reads `-print-changed` output as it arrives (`feed` bytes, then `close`)
    and keeps, per pass that changed something, the functions' text before and after
    (`LlvmDump`). The text before is LLVM's own (`-print-before-changed`), or, in a
    dump without it, what the function looked like at its last change; a text before that
    equals the last one kept is that same string object, so a function's unchanged text is
    held once. Lines that are not LLVM's dump (TVM's log) are handed to `passthrough`.

    `on_dump(dump)` (optional) sees each changed pass as soon as it is read."""

    def __init__(self, passthrough: Callable[[bytes], None] | None = None,
                 on_dump: Callable[[LlvmDump], None] | None = None) -> None:
        self.dumps: list[LlvmDump] = []
        self.skipped: dict[str, int] = {}
        """`{pass name: runs that changed nothing}` over the whole dump."""
        self.headers = 0
        """Every `IR Dump After`/`IR Deleted After` header read (changed or not)."""
        self.start: dict[str, str] = {}
        """`{symbol: text}` of the module before LLVM's first pass."""
        self._now: dict[str, str] = {}
        self._passthrough = passthrough
        self._on_dump = on_dump
        self._pending = b""
        self._head: tuple[str, str] | None = None  # (kind, header text) of the open body
        self._body: list[str] = []
        self._before: tuple[str, list[str]] | None = None  # LLVM's text before the next dump
        self._since = 0  # no-change runs since the last changed dump
        self._started = False

    # ------------------------------------------------------------------ streaming
    def feed(self, chunk: bytes) -> None:
        data = self._pending + chunk
        cut = data.rfind(b"\n") + 1
        self._pending = data[cut:]
        if not cut:
            return
        lines = data[:cut].decode("utf-8", "replace").split("\n")
        lines.pop()  # what follows the last newline: nothing
        passed = []
        body = self._body
        for line in lines:
            if line.startswith("*** IR "):
                m = _HEADER.match(line)
                if m is not None:
                    self._header(m.group(1), m.group(2) or "")
                    body = self._body
                    continue
            if self._head is None or (line.startswith("[") and _TVM_LOG.match(line)):
                passed.append(line)
            else:
                body.append(line)
        if passed and self._passthrough is not None:
            self._passthrough(("\n".join(passed) + "\n").encode("utf-8", "replace"))

    def close(self) -> None:
        if self._pending:
            tail, self._pending = self._pending, b""
            self.feed(tail + b"\n")
        self._finish()
        self._head = None

    # -------------------------------------------------------------------- headers
    def _header(self, kind: str, text: str) -> None:
        self._finish()
        self._head = None
        if kind == "Dump At Start":
            self._started = True
            self._head = (kind, text)
        elif kind == "Dump Before":
            self._head = (kind, text)
        elif kind in ("Dump After", "Deleted After"):
            self.headers += 1
            m = _AFTER.match(text)
            if m is None:
                return
            if m.group(3):  # omitted because no change / filtered out
                self._since += 1
                name = m.group(1)
                self.skipped[name] = self.skipped.get(name, 0) + 1
                return
            self._head = (kind, text)
        # "IR Pass ... ignored/invalidated": no body

    def _finish(self) -> None:
        if self._head is None:
            return
        kind, text = self._head
        lines, self._body = self._body, []
        if kind == "Dump At Start":
            funcs, rest = split_functions(lines)
            self._now = {**funcs, MODULE: rest}
            self.start = dict(self._now)
            return
        if kind == "Dump Before":
            self._before = (text, lines)
            return
        before, self._before = self._before, None
        m = _AFTER.match(text)
        if m is None:
            return
        pass_name, target = m.group(1), m.group(2)
        scope, named = _scope(target)
        was: dict[str, str] | None = None  # LLVM's text before, per function (and MODULE)
        if before is not None and before[0] == text:
            blines = before[1]
            if scope == "loop" and blines and blines[0].startswith(" (loop:"):
                blines = blines[1:]
            bfuncs, brest = split_functions(blines)
            was = {sym: self._kept(sym, t) for sym, t in bfuncs.items()}
            if scope == "module":
                was[MODULE] = self._kept(MODULE, brest)
        changes: list[tuple[str, str, str]] = []
        if kind == "Deleted After":
            for sym in named:
                old = self._now.pop(sym, "")
                changes.append((sym, old if was is None else was.get(sym, old), ""))
        else:
            if scope == "loop" and lines and lines[0].startswith(" (loop:"):
                lines = lines[1:]
            funcs, rest = split_functions(lines)
            if scope == "module":
                gone = [s for s in (self._now if was is None else was)
                        if s != MODULE and s not in funcs]
                for sym in gone:  # gone from the module
                    old = self._now.pop(sym, "")
                    changes.append((sym, old if was is None else was[sym], ""))
                for sym in [s for s in self._now if s != MODULE and s not in funcs]:
                    del self._now[sym]
                prev = self._now.get(MODULE, "") if was is None else was[MODULE]
                if rest != prev:
                    changes.append((MODULE, prev, rest))
                self._now[MODULE] = rest
            for sym, after in funcs.items():
                prev = self._now.get(sym, "") if was is None else was.get(sym, "")
                if after != prev:
                    changes.append((sym, prev, after))
                if after != self._now.get(sym):
                    self._now[sym] = after
        dump = LlvmDump(pass_name, target, scope, tuple(changes), self._since)
        self._since = 0
        self.dumps.append(dump)
        if self._on_dump is not None:
            self._on_dump(dump)

    def _kept(self, sym: str, text: str) -> str:
        """`text`, as the string already kept for `sym` when they are equal."""
        now = self._now.get(sym)
        return now if now == text else text

    @property
    def final(self) -> dict[str, str]:
        """`{symbol: text}` after the last pass (the module the code was made from)."""
        return {k: v for k, v in self._now.items() if k != MODULE}


# --------------------------------------------------------------------- descriptor 2
@contextlib.contextmanager
def _fd2_to(consume: Callable[[bytes], None] | None = None, *,
            make: Callable[[Callable[[bytes], None]], Callable[[bytes], None]] | None = None
            ) -> Iterator[Callable[[bytes], None]]:
    """Inside the block, everything written to file descriptor 2 (C++ writes there,
    below `sys.stderr`) goes to `consume` in a reader thread, as it comes; the block
    gets a function that writes to the descriptor's previous target (the real stderr, or
    the pipe of an enclosing capture). `make(write_back)` instead gives the consumer that
    function before anything is read. Where descriptor 2 cannot be redirected, nothing is
    captured and the writer drops what it is given."""
    done = threading.Event()  # the block is over: descriptor 2 is the previous target again
    target: list[int] = []  # the previous target's descriptor, once redirected

    def write_back(data: bytes) -> None:
        try:
            os.write(2 if done.is_set() or not target else target[0], data)
        except OSError:
            pass

    if make is not None:
        consume = make(write_back)
    assert consume is not None
    failed: list[BaseException] = []

    def pump(read_end: int, saved: int) -> None:
        target.append(saved)  # before the first chunk: the consumer may write back
        while True:
            try:
                chunk = os.read(read_end, 1 << 20)
            except OSError:
                break
            if not chunk:
                break
            if failed:  # the consumer broke: the rest passes through unread
                write_back(chunk)
                continue
            try:
                consume(chunk)
            except BaseException as exc:  # noqa: BLE001 - raised after the block; the
                failed.append(exc)  # pipe must be drained meanwhile

    # a pipe of 1 MB: LLVM writes in small pieces, the reader takes them in large ones
    with logs.fd2_into_pipe(pump, name="passlab-llvm-dump", pipe_bytes=1 << 20,
                            restored=done) as saved:
        yield write_back if saved is not None else (lambda data: None)
    if failed:
        raise failed[0]


def record_codegen(host_mod: Any, tgt: Any, options: Sequence[str] = (),
                   on_dump: Callable[[LlvmDump], None] | None = None) -> DumpReader:
    """Run TVM's LLVM code generator on `host_mod` (the lowered host module, as
    `tvm.tirx.build` hands it over) with `options` and `PRINT_OPTIONS`, and read
    what LLVM prints as it prints it. The runtime module made is dropped: it remembers the
    printing options and would print again whenever LLVM touched it later. Anything on
    descriptor 2 that is not LLVM's dump goes on to the real stderr (or an enclosing
    capture)."""
    from tvm import ir
    from tvm.tirx.build import codegen_build

    target = codegen_target(tgt, [*options, *PRINT_OPTIONS])
    whole = ir.IRModule({}, attrs=host_mod.attrs)  # as tvm.tirx.build's tir_to_runtime
    whole.update(host_mod)
    readers: list[DumpReader] = []

    def make(write_back: Callable[[bytes], None]) -> Callable[[bytes], None]:
        readers.append(DumpReader(write_back, on_dump))
        return readers[0].feed

    # TVM's benign log lines are the build's, said once already: sorted away again
    with logs.sorted_stderr(), _fd2_to(make=make):
        lib = codegen_build(whole, target)
        del lib
    readers[0].close()
    return readers[0]


#: The environment variable that caps how many processes record kernels' LLVM passes
#: (`record_kernels`), this one included; 1 records them one after another here.
WORKERS_ENV = "PASSLAB_LLVM_WORKERS"
#: At most this many processes by default (each holds TVM: a few hundred MB).
MAX_WORKERS = 8
#: Below this much lowered module (its `tvm.ir.save_json` text, all kernels together)
#: no worker is started unless asked for (or started ahead, `started_workers`): measured
#: here, recording takes ~4-5 s per MB of it and a worker ~1.4 s to import TVM (the MLP,
#: 0.28 MB, records in ~1.3 s alone).
WORKER_MIN_BYTES = 1 << 20


@dataclass(frozen=True)
class KernelRecording:
    """What LLVM printed while one kernel's functions were compiled alone
    (`record_kernels`): the `dumps` of the passes that changed them, the runs that
    changed nothing per pass (`skipped`), every pass run (`headers`) and the `seconds`
    its compilation took (in this process or a worker's)."""

    kernel: str
    dumps: tuple[LlvmDump, ...]
    skipped: tuple[tuple[str, int], ...]
    headers: int
    seconds: float


def _recorded(kernel: str, reader: DumpReader, seconds: float) -> KernelRecording:
    return KernelRecording(kernel, tuple(reader.dumps), tuple(sorted(reader.skipped.items())),
                           reader.headers, seconds)


def worker_count(workers: int | None, jobs: int) -> int:
    """How many processes `record_kernels` uses for `jobs` kernels: `workers`, or the
    `PASSLAB_LLVM_WORKERS` environment variable, or the CPUs this process may use (at
    most `MAX_WORKERS`; `record_kernels` then starts none for a small module); never
    more than the jobs."""
    if workers is None:
        workers = _asked_workers()
    if workers is None:
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count() or 1
        workers = min(cpus, MAX_WORKERS)
    return max(1, min(workers, jobs))


def _asked_workers() -> int | None:
    """`PASSLAB_LLVM_WORKERS` as a number, or None where it is not set."""
    said = os.environ.get(WORKERS_ENV, "").strip()
    if not said:
        return None
    if not said.isdigit() or int(said) < 1:
        raise ValueError(f"{WORKERS_ENV}={said!r}: the number of processes that record "
                         "kernels' LLVM passes is an integer >= 1 (1: one after another "
                         "in this process)")
    return int(said)


def record_kernels(host_mod: Any, tgt: Any, kernels: Sequence[str],
                   owner: Callable[[str], str | None],
                   options: Sequence[str] = (), workers: int | None = None,
                   on_kernel: Callable[[int, int], None] | None = None,
                   in_process: bool = True, started: Workers | None = None
                   ) -> list[KernelRecording]:
    """`record_codegen` of each of `kernels` compiled alone: the functions of
    `host_mod` whose symbol `owner(symbol)` says is that kernel's (matched against every
    kernel of the module, so that `fused_add_relu_compute_` is not also
    `fused_add`'s). One LLVM module
    per kernel costs far less than the whole module's recording (LLVM's printing of a
    function takes time in proportion to the module around it), and the kernels are
    spread over `worker_count(workers, ...)` processes: this one, which starts on the
    largest kernel at once, and worker processes (`python -c`, TVM imported afresh)
    that take the next ones as soon as they are ready (none for a module smaller than
    `WORKER_MIN_BYTES`, unless `workers` or `PASSLAB_LLVM_WORKERS` asks for them).
    `started`: workers started earlier (`started_workers`), used instead of new ones.
    Results in the order of `kernels`. `on_kernel(done, total)` is called here between kernels. A worker that
    dies hands its kernel back; an error in a kernel's recording raises here, once every
    worker is stopped. `in_process=False`: with more than one process, this one only
    waits for the workers (and records what they could not)."""
    import tvm

    jobs = kernel_modules(host_mod, kernels, owner)
    results: list[KernelRecording | None] = [None] * len(jobs)

    def here(i: int) -> None:
        kernel, mod = jobs[i]
        start = time.perf_counter()
        reader = record_codegen(mod, tgt, options)
        results[i] = _recorded(kernel, reader, time.perf_counter() - start)

    if started is not None and (not started.procs or len(jobs) < 2):
        started.stop()
        started = None
    if started is None:
        count = worker_count(workers, len(jobs))
        if count <= 1:
            return _one_by_one(jobs, here, results, on_kernel)
    texts = [tvm.ir.save_json(mod) for _, mod in jobs]
    if started is None:
        if workers is None and _asked_workers() is None and in_process \
                and sum(map(len, texts)) < WORKER_MIN_BYTES:
            return _one_by_one(jobs, here, results, on_kernel)  # quicker than a worker's start
        started = Workers(count - (1 if in_process else 0))
    pool = started
    pool.assign(tvm.ir.save_json(tgt), tuple(options), jobs, texts, results)
    try:
        if not in_process:
            pool.wait()
        while True:
            i = pool.take(wait=True)
            if i is None:
                break
            here(i)
            if on_kernel is not None:
                on_kernel(sum(r is not None for r in results), len(jobs))
    finally:
        pool.stop()
    pool.raise_failure()
    return [r for r in results if r is not None]


@contextlib.contextmanager
def started_workers(kernels: int | None = None) -> Iterator[Workers | None]:
    """Workers for a `record_kernels` of `kernels` kernels (None: as many as the module
    will have), started now and stopped on leaving (unless `record_kernels` stopped them
    first); None where `worker_count` leaves this process alone."""
    count = worker_count(None, kernels or MAX_WORKERS + 1) - 1
    if count < 1:
        yield None
        return
    workers = Workers(count)
    try:
        yield workers
    finally:
        workers.stop()


def _one_by_one(jobs: Sequence[Any], here: Callable[[int], None],
                results: list[KernelRecording | None],
                on_kernel: Callable[[int, int], None] | None) -> list[KernelRecording]:
    for i in range(len(jobs)):
        here(i)
        if on_kernel is not None:
            on_kernel(i + 1, len(jobs))
    return [r for r in results if r is not None]


#: What a worker process runs: TVM imported without PyTorch (apache-tvm-ffi imports it when
#: it can, for DLPack exchange, which code generation never uses): 1.4 s and 200 MB instead
#: of 3.3 s and 400 MB, measured here.
_WORKER = ("import sys; sys.modules['torch'] = None; "
           "from passlab._tvm.llvm import _serve; _serve()")


class Workers:
    """Worker processes of `record_kernels` and the queue of kernels they share with
    this process (largest first), each worker fed by a thread of its own. They can be
    started before there is anything to record (`started_workers`): a build that will
    record its kernels' LLVM passes starts them before its first pass, so their import
    of TVM runs beside the build on another core; the kernels come later (`assign`).
    One set of workers serves one `record_kernels` call."""

    def __init__(self, count: int) -> None:
        import subprocess
        import tempfile

        self.jobs: Sequence[tuple[str, Any]] = ()
        self.texts: Sequence[str] = ()
        self.results: list[KernelRecording | None] = []
        self.target: str = ""
        self.options: tuple[str, ...] = ()
        self.queue: Any = None  # the kernels left: None until `assign`
        self.stopped = False
        self.cond = threading.Condition()
        self.inflight = 0
        self.errors: list[str] = []
        self.procs: list[Any] = []
        self.logs: list[Any] = []
        self.threads: list[threading.Thread] = []
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (root, os.environ.get("PYTHONPATH", "")) if p)}
        for _ in range(count):
            log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
            try:
                proc = subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=log, env=env)
            except OSError:  # no Python to start: this process records every kernel
                log.close()
                break
            self.procs.append(proc)
            self.logs.append(log)
            thread = threading.Thread(target=self._feed, args=(proc,), daemon=True,
                                      name="passlab-llvm-worker")
            thread.start()
            self.threads.append(thread)

    def assign(self, target: str, options: tuple[str, ...],
               jobs: Sequence[tuple[str, Any]], texts: Sequence[str],
               results: list[KernelRecording | None]) -> None:
        """The kernels to record (`jobs`, their modules' JSON `texts`), the target (as
        JSON) and options, and where the recordings go."""
        from collections import deque

        with self.cond:
            self.jobs, self.texts, self.results = jobs, texts, results
            self.target, self.options = target, options
            self.queue = deque(sorted(range(len(jobs)), key=lambda i: -len(texts[i])))
            self.cond.notify_all()

    def take(self, wait: bool = False) -> int | None:
        """The next kernel to record, or None when there is none left (with `wait`:
        none left and none being recorded by a worker, which could hand one back)."""
        with self.cond:
            while wait and not self.queue and self.inflight:
                self.cond.wait(0.5)
            return self.queue.popleft() if self.queue and not self.errors else None

    def wait(self) -> None:
        """Until the workers have recorded every kernel, or none of them is left."""
        with self.cond:
            while (self.queue or self.inflight) and not self.errors \
                    and any(t.is_alive() for t in self.threads):
                self.cond.wait(0.5)

    def _feed(self, proc: Any) -> None:
        import json

        try:
            if proc.stdout.readline().strip() != b"ready":
                return  # it could not start (its log says why): the others go on
            while True:
                with self.cond:
                    while self.queue is None and not self.stopped:
                        self.cond.wait()  # started ahead: the kernels come later
                    if not self.queue or self.errors or self.stopped:
                        return
                    i = self.queue.popleft()
                    self.inflight += 1
                done = False
                try:
                    proc.stdin.write(json.dumps(dict(
                        kernel=self.jobs[i][0], module=self.texts[i], target=self.target,
                        options=list(self.options))).encode() + b"\n")
                    proc.stdin.flush()
                    line = proc.stdout.readline()
                    if line:
                        answer = json.loads(line)
                        if answer.get("error"):
                            self.errors.append(f"kernel {self.jobs[i][0]}: {answer['error']}")
                        else:
                            self.results[i] = _from_wire(self.jobs[i][0], answer)
                        done = True
                finally:
                    with self.cond:
                        if not done:
                            self.queue.appendleft(i)  # the worker died: another takes it
                        self.inflight -= 1
                        self.cond.notify_all()
                if not done:
                    return
        except (OSError, ValueError):
            return
        finally:
            _stop(proc)

    def stop(self) -> None:
        """End the workers (idle or not) and pass on what they said that was not LLVM's
        dump."""
        with self.cond:
            if self.stopped:
                return
            self.stopped = True
            self.cond.notify_all()
        for proc in self.procs:
            _stop(proc)
        for thread in self.threads:
            thread.join(5)
        for log in self.logs:  # what workers said that was not LLVM's dump goes on
            try:
                log.seek(0)
                said = log.read()
                log.close()
            except OSError:
                continue
            if said and not self.errors:
                try:
                    sys.stderr.flush()
                    os.write(2, said)
                except OSError:
                    pass

    def raise_failure(self) -> None:
        if self.errors:
            raise RuntimeError("recording LLVM's passes in a worker process failed: "
                               + "; ".join(self.errors))


def _stop(proc: Any) -> None:
    """End a worker (killed first: closing a pipe another thread reads would wait for it)."""
    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(5)
    except Exception:  # noqa: BLE001 - a process that does not end after a kill: left
        pass
    for pipe in (proc.stdin, proc.stdout):
        try:
            pipe.close()
        except (OSError, ValueError):
            pass


def _to_wire(reader: DumpReader, seconds: float) -> dict[str, Any]:
    """A recording as JSON data, each distinct text once."""
    ids: dict[str, int] = {}
    texts: list[str] = []

    def tid(text: str) -> int:
        found = ids.get(text)
        if found is None:
            found = ids[text] = len(texts)
            texts.append(text)
        return found

    dumps = [[d.pass_name, d.target, d.scope, d.skipped,
              [[sym, tid(b), tid(a)] for sym, b, a in d.changes]] for d in reader.dumps]
    return dict(texts=texts, dumps=dumps, skipped=sorted(reader.skipped.items()),
                headers=reader.headers, seconds=seconds)


def _from_wire(kernel: str, data: dict[str, Any]) -> KernelRecording:
    texts = data["texts"]
    dumps = tuple(LlvmDump(p, t, sc, tuple((sym, texts[b], texts[a])
                                           for sym, b, a in changes), sk)
                  for p, t, sc, sk, changes in data["dumps"])
    return KernelRecording(kernel, dumps, tuple((n, c) for n, c in data["skipped"]),
                           data["headers"], data["seconds"])


def _serve() -> None:
    """A worker process of `record_kernels`: says "ready" once TVM is imported, then
    reads one JSON job a line (a kernel's lowered module and the target, as
    `tvm.ir.save_json` wrote them, and the LLVM options) and answers each with one JSON
    line, the recording or the error; it ends at the end of its input (its parent
    closed it, or died)."""
    import json

    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything else printed goes where stderr goes, never into the answers
    import tvm

    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        job = json.loads(line)
        try:
            mod, tgt = tvm.ir.load_json(job["module"]), tvm.ir.load_json(job["target"])
            start = time.perf_counter()
            reader = record_codegen(mod, tgt, job["options"])
            answer = _to_wire(reader, time.perf_counter() - start)
        except Exception as exc:  # noqa: BLE001 - said to the parent, which raises it
            from passlab.errors import first_line

            answer = dict(error=f"{type(exc).__name__}: {first_line(exc)}")
        out.write(json.dumps(answer).encode() + b"\n")
        out.flush()


def kernel_modules(host_mod: Any, kernels: Sequence[str],
                   owner: Callable[[str], str | None]) -> list[tuple[str, Any]]:
    """Each of `kernels` with the module of its functions alone: those of `host_mod`
    whose symbol `owner(symbol)` says is that kernel's (each symbol's owner found once)."""
    owners = {gv.name_hint: owner(gv.name_hint) for gv in host_mod.functions}

    def of(kernel: str) -> Callable[[str], bool]:
        return lambda name: owners[name] == kernel

    return [(k, only_functions(host_mod, of(k))) for k in kernels]


def only_functions(mod: Any, keep: Callable[[str], bool]) -> Any:
    """`mod` with only the functions whose name `keep` accepts (its attributes kept)."""
    import tvm

    return tvm.IRModule({gv: f for gv, f in mod.functions.items() if keep(gv.name_hint)},
                        attrs=mod.attrs)


def module_target(mod: Any) -> Any:
    """The target a lowered module's functions are bound to (their `target`
    attribute), or None."""
    for func in mod.functions.values():
        attrs = func.attrs
        if attrs is not None and attrs.get("target") is not None:
            return attrs["target"]
    return None


def compile_ll(host_mod: Any, tgt: Any, options: Sequence[str] = ()) -> str:
    """The LLVM IR TVM's code generator makes of `host_mod` with `options` (no printing
    option: nothing reaches stderr); its runtime module is dropped."""
    from tvm import ir
    from tvm.tirx.build import codegen_build

    whole = ir.IRModule({}, attrs=host_mod.attrs)
    whole.update(host_mod)
    lib = codegen_build(whole, codegen_target(tgt, options))
    return str(lib.inspect_source("ll"))


# ------------------------------------------------------------------- IR statistics
_LABEL = re.compile(r"^([\w.$-]+|\"[^\"]*\"|\d+):")
_VECTOR = re.compile(r"<(?:vscale x )?(\d+) x ([\w.]+|ptr)>")


@dataclass(frozen=True)
class FunctionStats:
    """Counts of one function's printed LLVM IR: instructions (debug records and labels
    are not), basic blocks, instructions whose type or operands are vectors, and the
    vector types they use (`{"<8 x float>": 12}`)."""

    instructions: int = 0
    blocks: int = 0
    vector_instructions: int = 0
    vector_types: tuple[tuple[str, int], ...] = field(default=())


def function_stats(text: str) -> FunctionStats:
    """`FunctionStats` of one function's text ("" gives zeros)."""
    if not text:
        return FunctionStats()
    instructions = vector = 0
    blocks = 0
    types: dict[str, int] = {}
    in_body = False
    first = True
    for line in text.split("\n"):
        if not in_body:
            in_body = line.startswith("define ")
            continue
        if line == "}":
            break
        if not line or line.startswith(";"):
            continue
        if not line[0].isspace():
            if _LABEL.match(line):
                blocks += 1
                first = False
            continue
        stripped = line.lstrip()
        if stripped.startswith(("#dbg_", ";")):
            continue
        if first:  # instructions before any label: the unnamed entry block
            blocks += 1
            first = False
        instructions += 1
        found = _VECTOR.findall(stripped)
        if found:
            vector += 1
            for lanes, elem in found:
                key = f"<{lanes} x {elem}>"
                types[key] = types.get(key, 0) + 1
    return FunctionStats(instructions, blocks, vector,
                         tuple(sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))))


def vector_types(text: str) -> dict[str, int]:
    """`{"<8 x float>": n, ...}`: how often each vector type is written in `text`
    (any LLVM IR: a function, a module)."""
    out: dict[str, int] = {}
    for lanes, elem in _VECTOR.findall(text):
        key = f"<{lanes} x {elem}>"
        out[key] = out.get(key, 0) + 1
    return out
