"""Bring your own model: an IRModule from whatever the user has.

`load` picks the importer from what it is given: an IRModule (as is), TVMScript
source, a `tvm.relax.frontend.nn.Module`, an ONNX file or `onnx.ModelProto`, a
PyTorch `nn.Module` or `torch.export.ExportedProgram`. Each importer's package is
imported only when it is needed; a missing one names the extra to install.

Every call into a TVM frontend lives in the `_from_*` functions at the bottom, so that a
TVM upgrade touches only them.

Examples
--------
>>> import passlab
>>> from passlab.models import load
>>> load(passlab.models.mlp()) is not None
True
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from passlab import _tvm
from passlab.errors import (
    MissingImporterError,
    ModelFormatError,
    close_matches,
    first_line,
    unknown,
)
from passlab.models import _pt2, _source_names, _torch_dims
from passlab.models.builtin import NAMES, by_name

__all__ = ["load", "as_module", "resolve_model", "ModelFormatError", "MissingImporterError", "SUFFIXES"]

#: File suffixes :func:`load` reads, and what they hold.
SUFFIXES: dict[str, str] = {
    ".onnx": "ONNX model (onnx.save, torch.onnx.export)",
    ".pt2": "PyTorch ExportedProgram (torch.export.save)",
    ".py": "TVMScript source (IRModule.script())",
}

#: The pip extra that brings each importer's package.
_EXTRAS = {"onnx": "onnx", "torch": "torch"}


def _need(module: str, what: str, package: str, extra: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingImporterError(
            f"{what} needs the {package} package: pip install 'passlab[{extra}]' "
            f"(or pip install {package}); importing it failed with: {exc}"
        ) from exc


# --------------------------------------------------------------------------- dispatch
def load(
    model: Any,
    *,
    spec: Mapping[str, Any] | None = None,
    example_inputs: Sequence[Any] | None = None,
    keep_params_in_input: bool = False,
    dtype: str = "float32",
    trust: bool = False,
    inputs: Sequence[str] | None = None,
    **shapes: Any,
):
    """Import `model` as a `tvm.IRModule`, choosing the importer from its type.

    Parameters
    ----------
    model
        One of:

        * a `tvm.IRModule` (returned as is);
        * TVMScript source text (`IRModule.script()` output);
        * a path (`str` or `os.PathLike`) to a `.onnx` file, a `.pt2` exported
          PyTorch program or a `.py` file of TVMScript;
        * an `onnx.ModelProto`;
        * a `tvm.relax.frontend.nn.Module` (give `spec=` or the input shapes);
        * a PyTorch `torch.nn.Module` (give `example_inputs=`) or a
          `torch.export.ExportedProgram`.
    spec
        For a `relax.frontend.nn.Module`: the `export_tvm` spec, e.g.
        `{"forward": {"x": nn.spec.Tensor((1, 16), "float32")}}`. Without it, the
        shapes given as keywords make the spec of `forward`.
    example_inputs
        For a `torch.nn.Module`: the positional inputs `torch.export.export` traces
        with, e.g. `(torch.randn(1, 3, 32, 32),)`.
    keep_params_in_input
        ONNX and PyTorch: make the weights parameters of `main` after the inputs
        (`num_input` says how many inputs; for ONNX the weight values are in
        `mod["main"].attrs["params"]`). Default: weights are bound as constants, so
        `passlab.build(mod).run(x)` computes with the real weights.
    dtype
        Element type of the inputs given by shape (`nn.Module`); ONNX reads its own.
    trust
        For a `.pt2` file: read it with `torch.export.load` as it is, pickles
        included. Default False: `.pt2` archives are read as data (tensors, JSON), and
        one that holds pickled weights or objects, compiled libraries, the old layout or
        a shape expression that is not plain arithmetic is refused with
        `passlab.errors.UntrustedModelError` (nothing in it runs). ONNX files are
        data either way; TVMScript always runs Python (see below).
    inputs
        The names of the entry function's real inputs; every other parameter is a weight.
        They become its first parameters and TVM's `num_input` attribute says how many,
        which is what every view folds weights by. Without it, an ONNX model whose
        weights are graph inputs (`torch.onnx.export(..., export_params=False)`) is
        marked by itself: an input is a weight when it is only consumed as a weight
        operand (a `Conv` or `Gemm` weight or bias, `BatchNormalization`
        statistics, ...), directly or through a `Transpose`/`Reshape`-like op.
    **shapes
        Input shapes by input name, e.g. `load("m.onnx", input=(1, 3, 32, 32))`: fixes
        the dynamic dimensions of ONNX inputs, or makes the spec of an `nn.Module`.
        Names that are not Python identifiers go through a dict:
        `load("m.onnx", **{"input.1": (1, 3, 224, 224)})`.

    Returns
    -------
    tvm.IRModule
        From ONNX and PyTorch, the span of each binding of `main` names the source
        node it came from (the ONNX node name, e.g. `/layer1/layer1.0/conv1/Conv`; the
        PyTorch module path and `torch.export` node name, e.g. `layer1.0.conv1` and
        `convolution_1`), so that `passlab.provenance` can look operators and
        kernels up by them. Spans are not printed and change no structural hash.

    Warnings
    --------
    Loading TVMScript (a `.py` file, or source text) runs Python: TVM's parser evaluates
    the decorators and annotations in it, so load only files you trust. passlab never
    loads one by itself (saved traces and reproducers carry no TVMScript to run); only
    this explicit call, or naming the file on the command line, does.

    Raises
    ------
    FileNotFoundError
        A path that does not exist.
    ModelFormatError
        A file that is not a model, an unknown file type, or a model with operators the
        importer does not support.
    UntrustedModelError
        (a ModelFormatError) A `.pt2` file that only loads by running code from it,
        without `trust=True`.
    MissingImporterError
        The importer's package (onnx, torch) is not installed; the message names the
        extra to install.

    Examples
    --------
    >>> import passlab
    >>> from passlab.models import load
    >>> mod = load(passlab.models.mlp().script())
    >>> [gv.name_hint for gv in mod.get_global_vars()]
    ['forward']
    """
    mod = _import(model, spec, example_inputs, keep_params_in_input, dtype, trust, shapes)
    if inputs is None:
        return mod
    if isinstance(inputs, str) or not all(isinstance(n, str) for n in inputs):
        raise TypeError(f"inputs= is a list of input names, e.g. inputs=['input'], not "
                        f"{inputs!r}")
    name = _tvm.entry_function(mod)
    mod = _tvm.tvm().IRModule(dict(mod.functions_items()), attrs=mod.attrs,
                              global_infos=mod.global_infos)
    mod[name] = _tvm.with_inputs(mod[name], list(inputs))
    return mod


def _import(model: Any, spec: Any, example_inputs: Any, keep_params_in_input: bool,
            dtype: str, trust: bool, shapes: dict[str, Any]) -> Any:
    if _tvm.is_module(model):
        _no_extras("an IRModule", spec, example_inputs, shapes)
        return model
    if isinstance(model, (str, os.PathLike)):
        if isinstance(model, str) and _looks_like_script(model):
            _no_extras("TVMScript source", spec, example_inputs, shapes)
            return _from_script(model, "the TVMScript given as the model")
        return _load_path(Path(model), spec, example_inputs, keep_params_in_input, shapes,
                          trust)
    kind = _kind(model)
    if kind == "onnx":
        return _from_onnx(model, shapes, keep_params_in_input, "the ONNX model")
    if kind == "relax_nn":
        return _from_relax_nn(model, spec, shapes, dtype)
    if kind in ("torch_module", "torch_program"):
        return _from_torch(model, example_inputs, keep_params_in_input, shapes)
    raise TypeError(f"cannot import a {type(model).__module__}.{type(model).__qualname__}: "
                    f"a model is {_WHAT}")


_WHAT = ("a tvm.IRModule, TVMScript source, a path to a " + ", ".join(SUFFIXES) + " file, an "
         "onnx.ModelProto, a tvm.relax.frontend.nn.Module, a torch.nn.Module or a "
         "torch.export.ExportedProgram")


def as_module(model: Any, *, trust: bool = False):
    """An IRModule from anything passlab takes as a model: an IRModule, a built-in model
    name (`passlab.models.NAMES`), TVMScript source, a model file path, or any
    object `load` takes. This is the one model resolution: `build`, `bisect`,
    `preview` and the command line all use it.

    A name that is none of these gives one error listing the built-in names (with close
    matches) and the file types `load` reads. `trust` is `load`'s, for
    model files.

    Examples
    --------
    >>> from passlab.models import as_module
    >>> [gv.name_hint for gv in as_module("mlp").get_global_vars()]
    ['forward']
    """
    if _tvm.is_module(model):
        return model
    if isinstance(model, str):
        if model in NAMES:
            return by_name(model)
        if _looks_like_script(model):
            return _from_script(model, "the text given as the model")
        if not _looks_like_path(model):
            raise unknown(
                "model", model, NAMES,
                extra="A model is a built-in name or the path of a "
                + ", ".join(SUFFIXES) + " file.",
            )
        return load(model, trust=trust)
    if not isinstance(model, os.PathLike) and _kind(model) is None:
        raise TypeError(f"cannot use {type(model).__qualname__!r} objects as models: a "
                        f"model is a built-in model name ({', '.join(NAMES)}), {_WHAT}")
    return load(model, trust=trust)


#: The command line's name for :func:`as_module`.
resolve_model = as_module


def _looks_like_script(text: str) -> bool:
    head = text.lstrip()
    return "\n" in text.strip() or head.startswith(("@", "# from tvm", "from tvm", "import tvm"))


def _looks_like_path(text: str) -> bool:
    return (os.sep in text or "/" in text or Path(text).suffix != "" or Path(text).exists())


def _no_extras(what: str, spec: Any, example_inputs: Any, shapes: Mapping[str, Any]) -> None:
    given = [k for k, v in (("spec", spec), ("example_inputs", example_inputs)) if v is not None]
    given += list(shapes)
    if given:
        raise TypeError(
            f"{', '.join(given)} given, but the model is {what}, whose shapes are already "
            "fixed; these options are for ONNX, nn.Module and PyTorch models"
        )


def _kind(obj: Any) -> str | None:
    """What kind of model `obj` is, judged from its class, without importing onnx or
    torch (a torch object can only exist when torch is already imported)."""
    for cls in type(obj).__mro__:
        mod, name = cls.__module__, cls.__name__
        if name == "ModelProto" and mod.startswith("onnx"):
            return "onnx"
        if name == "Module" and mod == "tvm.relax.frontend.nn.core":
            return "relax_nn"
        if name == "Module" and mod == "torch.nn.modules.module":
            return "torch_module"
        if name == "ExportedProgram" and mod.startswith("torch.export"):
            return "torch_program"
    return None


def _load_path(path: Path, spec: Any, example_inputs: Any, keep: bool,
               shapes: Mapping[str, Any], trust: bool = False):
    suffix = path.suffix.lower()
    known = ", ".join(f"{s} ({d})" for s, d in SUFFIXES.items())
    if path.is_dir():
        raise ModelFormatError(f"{str(path)!r} is a directory, not a model file; passlab reads "
                               f"{known}")
    if suffix not in SUFFIXES:
        hint = ""
        if not path.suffix:
            builtins = close_matches(str(path), NAMES)
            hint = (f" If you meant a built-in model ({', '.join(repr(b) for b in builtins)}), "
                    "use passlab.by_name." if builtins else
                    f" Built-in models: {', '.join(NAMES)}.")
        raise ModelFormatError(
            f"cannot tell how to import {str(path)!r}: unknown file type "
            f"{path.suffix or '(no suffix)'!r}. passlab reads {known}.{hint}"
        )
    if not path.exists():
        raise FileNotFoundError(
            f"no model file {str(path)!r} (looked in {Path.cwd()}); give the path of an "
            f"existing {suffix} file"
        )
    if suffix == ".onnx":
        return _from_onnx(_read_onnx(path), shapes, keep, repr(str(path)))
    if suffix == ".pt2":
        torch = _need("torch", "PyTorch import", "torch", _EXTRAS["torch"])
        try:
            # without trust, read as data: no pickle, no compiled library (models/_pt2.py)
            program = torch.export.load(str(path)) if trust else _pt2.load_untrusted(path)
        except ModelFormatError:
            raise
        except Exception as exc:
            raise ModelFormatError(
                f"{str(path)!r} is not a PyTorch ExportedProgram: torch.export.load failed "
                f"({type(exc).__name__}: {first_line(exc)}). A .pt2 file is what "
                "torch.export.save writes."
            ) from None
        return _from_torch(program, example_inputs, keep, shapes)
    _no_extras("a TVMScript file", spec, example_inputs, shapes)
    return _from_script(path.read_text(), repr(str(path)))


# ------------------------------------------------------------------------- importers
# Every call into a TVM frontend (or onnx/torch) is below.
def _from_script(text: str, what: str):
    try:
        return _tvm.parse_script(text)
    except Exception as exc:
        raise ModelFormatError(
            f"could not parse {what} as TVMScript ({type(exc).__name__}: "
            f"{first_line(exc)}); TVMScript is what IRModule.script() prints. Loading "
            "TVMScript runs the Python in it: load only files you trust"
        ) from None


def _read_onnx(path: Path):
    onnx = _need("onnx", "ONNX import", "onnx", _EXTRAS["onnx"])
    what = f"{str(path)!r} is not an ONNX model"
    right = "an ONNX model is the binary protobuf that onnx.save or torch.onnx.export write"
    try:
        model = onnx.load(str(path))
    except Exception as exc:
        raise ModelFormatError(
            f"{what}: it does not parse as an ONNX protobuf ({type(exc).__name__}: "
            f"{first_line(exc)}); {right}"
        ) from None
    # Protobuf parses an empty file, and some text, as an empty message.
    if model.ir_version == 0 or not model.graph.node:
        raise ModelFormatError(
            f"{what}: it parses as an empty ModelProto (ir_version {model.ir_version}, "
            f"{len(model.graph.node)} nodes); {right}"
        )
    return model


def _onnx_inputs(model) -> list[tuple[str, tuple]]:
    """`[(name, shape)]` of the graph's real inputs (not initializers); unknown
    dimensions are their `dim_param` name or `"?"`."""
    inits = {i.name for i in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        dims = vi.type.tensor_type.shape.dim
        out.append((vi.name, tuple(d.dim_value if d.HasField("dim_value") else
                                   (d.dim_param or "?") for d in dims)))
    return out


def _check_onnx_order(model, what: str) -> None:
    """Refuse a graph whose nodes read a tensor no earlier node, graph input or
    initializer makes (ONNX requires its nodes in topological order; TVM's importer then
    fails with a bare KeyError): a cycle (a node that reads its own output, or nodes that
    read each other's), nodes out of order, or a tensor nothing makes."""
    graph = model.graph
    made = {o: k for k, node in enumerate(graph.node) for o in node.output}
    known = {i.name for i in graph.input} | {i.name for i in graph.initializer} | {""}
    right = "ONNX requires a graph's nodes in topological order, each reading only what is made before it"
    for k, node in enumerate(graph.node):
        for name in node.input:
            if name in known:
                continue
            at = made.get(name)
            label = f"node {_onnx_name(graph, k)!r} ({node.op_type})"
            if at is None:
                raise ModelFormatError(f"{what} is not a valid ONNX graph: {label} reads "
                                       f"{name!r}, which no node, graph input or initializer "
                                       f"makes; {right}")
            loop = _onnx_cycle(graph, made)
            if k in loop:  # a cycle elsewhere: this node is only out of order
                names = " -> ".join(repr(_onnx_name(graph, j)) for j in loop)
                raise ModelFormatError(f"{what} is not a valid ONNX graph: it has a cycle, "
                                       f"each node reading the next one's output ({names}; "
                                       f"{label} reads {name!r}, made by "
                                       f"{'itself' if at == k else 'a node that depends on it'}"
                                       f"); {right}")
            raise ModelFormatError(f"{what} is not a valid ONNX graph: {label} reads {name!r} "
                                   f"before node {_onnx_name(graph, at)!r} makes it "
                                   f"(nodes out of order; {right}: export the model again, or "
                                   "sort its nodes, e.g. with onnx-graphsurgeon's toposort())")
        known.update(node.output)


def _onnx_name(graph: Any, k: int) -> str:
    """Node `k`'s name, or "#k" where it has none."""
    return graph.node[k].name or f"#{k}"


def _onnx_cycle(graph: Any, made: Mapping[str, int]) -> list[int]:
    """The node positions of one cycle of the graph (first node repeated at the end), or
    [] when it has none."""
    reads = [[made[i] for i in node.input if i in made] for node in graph.node]
    state = [0] * len(reads)  # 0 unseen, 1 on the path, 2 done
    for start in range(len(reads)):
        if state[start]:
            continue
        path, stack = [start], [iter(reads[start])]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state[nxt] == 1:
                return path[path.index(nxt):] + [nxt]
            elif state[nxt] == 0:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(reads[nxt]))
    return []


def _unsupported_onnx_ops(model) -> dict[str, list[str]]:
    """`{op_type: [node names]}` of the nodes TVM's ONNX importer cannot convert."""
    try:
        from tvm.relax.frontend.onnx.onnx_frontend import _get_convert_map

        known = set(_get_convert_map()) | {"If", "Constant"}
    except Exception:  # private API moved: let from_onnx report instead
        return {}
    out: dict[str, list[str]] = {}
    for i, node in enumerate(model.graph.node):
        if node.op_type not in known:
            out.setdefault(node.op_type, []).append(node.name or f"#{i}")
    return out


def _from_onnx(model, shapes: Mapping[str, Any], keep: bool, what: str):
    _need("onnx", "ONNX import", "onnx", _EXTRAS["onnx"])
    inputs = dict(_onnx_inputs(model))
    for name, shape in shapes.items():
        if name not in inputs:
            raise unknown("ONNX input", name, inputs,
                          extra=f"({what} has the inputs "
                          + ", ".join(f"{n}{_shape_text(s)}" for n, s in inputs.items()) + ")")
        _check_shape(name, shape, inputs[name])
    _check_onnx_order(model, what)
    unsupported = _unsupported_onnx_ops(model)
    if unsupported:
        raise ModelFormatError(_unsupported_message(what, unsupported))
    from tvm.relax.frontend.onnx import from_onnx

    shape_dict = {n: [int(d) for d in s] for n, s in shapes.items()}
    try:
        with _source_names.capturing("tvm.relax.frontend.onnx.onnx_frontend",
                                     "ONNXGraphImporter", "from_onnx", "_nodes") as tables, \
                warnings.catch_warnings():
            # "Renaming name fc.weight to fc_weight": TVM makes every ONNX name a valid
            # identifier; the original names stay in the spans (provenance), so say nothing
            warnings.filterwarnings("ignore", message=r"Renaming name \S+ to \S+")
            mod = from_onnx(model, shape_dict=shape_dict or None, keep_params_in_input=keep)
    except NotImplementedError as exc:  # tvm.error.OpNotImplemented and friends
        raise ModelFormatError(
            f"TVM's ONNX importer cannot convert {what}: {first_line(exc)}"
        ) from None
    # the importer's table: ONNX tensor name -> the Relax expression made for it
    table = tables[-1] if tables and isinstance(tables[-1], dict) else {}
    mod = _source_names.attach(mod, [(table[out], node.name) for node in model.graph.node
                                     for out in node.output if out in table])
    weights = _onnx_weight_inputs(model)
    main = mod["main"] if "main" in _tvm.functions(mod) else None
    if not any(weights) or main is None or _tvm.num_inputs(main) != len(weights):
        return mod
    # TVM makes one parameter per graph input without an initializer, in graph order
    # (renamed into identifiers: fc.weight -> fc_weight), then the kept weights
    mod["main"] = _tvm.with_inputs(main, [str(p.name) for p, w in zip(main.params, weights)
                                          if not w])
    return mod


#: Operand positions of ONNX operators that hold weights (0-based).
_WEIGHT_OPERANDS: dict[str, frozenset[int]] = {
    **dict.fromkeys(("Conv", "ConvTranspose", "Gemm", "InstanceNormalization",
                     "LayerNormalization", "GroupNormalization", "SimplifiedLayerNormalization"),
                    frozenset({1, 2})),
    "BatchNormalization": frozenset({1, 2, 3, 4}),
    "SkipLayerNormalization": frozenset({2, 3, 4}),
    "MatMul": frozenset({1}), "PRelu": frozenset({1}), "Gather": frozenset({0}),
    **dict.fromkeys(("LSTM", "GRU", "RNN"), frozenset({1, 2, 3})),
}
#: Operators that only reshape or retype a weight on its way to a weight operand.
_WEIGHT_PLUMBING = frozenset({"Transpose", "Reshape", "Unsqueeze", "Squeeze", "Flatten",
                              "Cast", "Identity"})


def _onnx_weight_inputs(model: Any) -> list[bool]:
    """For each graph input without an initializer, in order: is it used only as a
    weight? Every use must be a weight operand (`_WEIGHT_OPERANDS`), directly or
    through plumbing ops whose results are used only so; one used nowhere stays an
    input."""
    graph = model.graph
    inits = {i.name for i in graph.initializer}
    uses: dict[str, list[tuple[Any, int]]] = {}
    for node in graph.node:
        for k, name in enumerate(node.input):
            if name:
                uses.setdefault(name, []).append((node, k))
    outputs = {o.name for o in graph.output}

    def weight_only(name: str, depth: int = 0) -> bool:
        if name in outputs or not uses.get(name) or depth > 8:
            return False
        for node, k in uses[name]:
            if k in _WEIGHT_OPERANDS.get(node.op_type, ()):
                continue
            if node.op_type in _WEIGHT_PLUMBING and k == 0 and all(
                    weight_only(o, depth + 1) for o in node.output):
                continue
            return False
        return True

    return [weight_only(i.name) for i in graph.input if i.name not in inits]


def _shape_text(shape: Sequence[Any]) -> str:
    return "(" + ", ".join(map(str, shape)) + ")"


def _check_shape(name: str, shape: Any, declared: Sequence[Any]) -> None:
    ok = isinstance(shape, (tuple, list)) and all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
    if not ok:
        raise TypeError(f"the shape of input {name!r} must be a tuple of ints, e.g. "
                        f"(1, 3, 32, 32), not {shape!r}")
    if declared and len(declared) != len(shape):
        raise ValueError(f"input {name!r} has rank {len(declared)} "
                         f"{_shape_text(declared)}, but the shape given has rank {len(shape)}: "
                         f"{_shape_text(shape)}")
    for d, (given, want) in enumerate(zip(shape, declared)):
        if isinstance(want, int) and want > 0 and given != want:
            raise ValueError(f"input {name!r} has size {want} in dimension {d} "
                             f"{_shape_text(declared)}; the shape given says {given}")


def _unsupported_message(what: str, unsupported: Mapping[str, list[str]]) -> str:
    from tvm.relax.frontend.onnx.onnx_frontend import _get_convert_map

    known = sorted(_get_convert_map())
    parts = []
    for op, nodes in sorted(unsupported.items()):
        close = close_matches(op, known)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        where = ", ".join(repr(n) for n in nodes[:3]) + (", ..." if len(nodes) > 3 else "")
        parts.append(f"{op}{hint} at node{'s' if len(nodes) > 1 else ''} {where}")
    return (f"{what} uses operators TVM's ONNX importer does not support: "
            + "; ".join(parts) + f". It converts {len(known)} operators (e.g. "
            + ", ".join(known[:8]) + ", ...); replace or decompose the others before "
            "export (e.g. a lower opset, or onnxsim).")


def _from_relax_nn(module, spec: Mapping[str, Any] | None, shapes: Mapping[str, Any],
                   dtype: str):
    from tvm.relax.frontend import nn

    if spec is None:
        import inspect

        params = [p for p in inspect.signature(module.forward).parameters]
        if not shapes:
            raise TypeError(
                f"a tvm.relax.frontend.nn.Module needs its input shapes: give spec= or the "
                f"shape of each input of forward({', '.join(params)}), e.g. "
                f"load(module, {params[0] if params else 'x'}=(1, 16))"
            )
        for name in shapes:
            if name not in params:
                raise unknown("input of forward()", name, params)
        missing = [p for p in params if p not in shapes]
        if missing:
            raise TypeError(f"no shape for the input(s) {', '.join(missing)} of forward(); "
                            f"give {missing[0]}=(...)")
        spec = {"forward": {n: s if not isinstance(s, (tuple, list)) else
                            nn.spec.Tensor(tuple(s), dtype) for n, s in shapes.items()}}
    elif shapes:
        raise TypeError("give either spec= or input shapes, not both")
    mod, _ = module.export_tvm(spec=spec)
    return mod


def _from_torch(obj, example_inputs: Sequence[Any] | None, keep: bool,
                shapes: Mapping[str, Any]):
    torch = _need("torch", "PyTorch import", "torch", _EXTRAS["torch"])
    _need("tvm.relax.frontend.torch", "PyTorch import", "torch", _EXTRAS["torch"])
    from tvm.relax.frontend.torch import from_exported_program

    if shapes:
        raise TypeError(
            f"input shapes ({', '.join(shapes)}) given for a PyTorch model: give "
            "example_inputs=(torch.randn(...), ...) instead; torch.export traces with them"
        )
    if _kind(obj) == "torch_program":
        if example_inputs is not None:
            raise TypeError("example_inputs= is for a torch.nn.Module; an ExportedProgram "
                            "already holds its inputs")
        program = obj
    else:
        if example_inputs is None:
            raise TypeError(
                "a torch.nn.Module needs example_inputs= to trace with, e.g. "
                "load(model, example_inputs=(torch.randn(1, 3, 32, 32),))"
            )
        if not isinstance(example_inputs, (tuple, list)):
            example_inputs = (example_inputs,)
        was_training = obj.training
        try:
            with torch.no_grad():
                program = torch.export.export(obj.eval(), tuple(example_inputs))
        finally:
            obj.train(was_training)  # hand the user's module back in the mode it came
    try:
        with _source_names.capturing(
                "tvm.relax.frontend.torch.exported_program_translator",
                "ExportedProgramImporter", "from_exported_program", "env") as tables, \
                warnings.catch_warnings():
            # torch 2.13's run_decompositions (which the importer calls) deep-copies its
            # module call graph, and copying a LeafSpec warns that isinstance(...,
            # LeafSpec) is deprecated: nothing the user did or can change
            warnings.filterwarnings("ignore", category=FutureWarning,
                                    message=r"`isinstance\(treespec, LeafSpec\)` is deprecated")
            mod = from_exported_program(program, keep_params_as_input=keep,
                                        unwrap_unit_return_tuple=True)
    except (NotImplementedError, AssertionError, ValueError) as exc:
        raise ModelFormatError(
            f"TVM's PyTorch importer cannot convert this program: {type(exc).__name__}: "
            f"{first_line(exc)}"
        ) from None
    # the importer's table: fx.Node -> the Relax expression made for it; a node is named
    # by the path of the module that ran it (layer1.0.conv1) and by its own name (conv2d_1)
    table = tables[-1] if tables and isinstance(tables[-1], dict) else {}
    mod = _source_names.attach(mod, [
        (expr, name) for node, expr in table.items() if getattr(node, "op", "") ==
        "call_function" for name in (_module_path(node), node.name)])
    return _keep_dim_names(mod, _torch_dims.dim_names(program))


def _keep_dim_names(mod, names: Mapping[str, str]):
    """`mod` with the importer's symbolic variables (`s27`) named as the user's
    `torch.export.Dim` (`seq`), so that shapes read and `bounds=` take them."""
    from passlab._tvm import ir as _ir

    if not names or "main" not in _tvm.functions(mod):
        return mod
    func = mod["main"]
    renamed = _ir.rename_symbolic_vars(func, names)
    if renamed is not func:
        mod["main"] = _source_names.relabel(renamed, _source_names.source_names(func))
    return mod


def _module_path(node) -> str:
    """The path of the innermost module that ran an `fx.Node` (`""` at the top)."""
    stack = node.meta.get("nn_module_stack") or {}
    path = list(stack.values())[-1][0] if stack else ""
    return path if isinstance(path, str) else ""
