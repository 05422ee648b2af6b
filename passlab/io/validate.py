"""Checks that a saved trace can be handed to TVM without crashing the process.

TVM's `load_json` trusts its input: an array node that contains itself recurses until
the stack overflows, a null where TVM expects a value (a Relax function without a body)
loads and then crashes the printer. So `check_ir_graph` reads the JSON graph
that `tvm.ir.save_json` writes (`{"root_index", "nodes": [{"type", "data"}],
"metadata"}`) before TVM sees it, with the field information of tvm_ffi's own type
registry (each registered type's fields, their static kind and type schema), and
`passlab.io._wellformed.check_loaded` runs TVM's well-formedness checks on what
loaded before any view touches it. Anything wrong is a `TraceFileError` that names the
node index, its type key and the field. (`trace.json` is checked by
`passlab.io._trace_json`, with the step limits defined here.)

The format, as tvm_ffi 0.1.14 writes and reads it (`src/ffi/extra/serialization.cc`):
a node is `{"type": key}` plus `"data"`: a plain value for `bool`, `int`,
`float`, `DataType` (a string), `Device` ([type, id]), `ffi.String`,
`ffi.Bytes` (base64), `ffi.Shape` (integers); a list of node indices for
`ffi.Array`/`ffi.List`; alternating key and value indices for `ffi.Map`/`ffi.Dict`;
for an object, a dict of its fields (a plain value for fields of static kind
bool/int/float/DataType, a node index otherwise) or, for the few types with a JSON form
of their own, that form (`ir.Op`: the operator name, `ffi.Tensor`: base64 of TVM's
tensor format). The serializer writes children before their parents, so in a graph it
wrote every reference points to a lower index: requiring that rules out cycles.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from typing import Any

from passlab.errors import TraceFileError
from passlab.io._own_forms import b64, check_imm, check_own_form
from passlab.io._text import MAX_NAME, MAX_SOURCE_NAME, MAX_STRING, MAX_TENSOR_NDIM, bad_text

__all__ = ["MAX_MEMBERS", "MAX_TRACE_JSON_BYTES", "MAX_IR_JSON_BYTES", "MAX_IR_JSON_VALUES",
           "MAX_TRACE_JSON_VALUES", "MAX_IR_NODES", "MAX_IR_DEPTH", "MAX_FUNCTION_SIZE",
           "MAX_TENSOR_NDIM", "MAX_STEPS", "MAX_STEP_DEPTH", "MAX_NAME", "MAX_STRING",
           "MAX_SOURCE_NAME", "bad_text", "references", "reference_fields", "modules_in",
           "check_ir_graph"]

# ----------------------------------------------------------------------- limits
#: Members a trace archive may hold (passlab writes two: ``trace.json`` and ``ir.json``).
MAX_MEMBERS = 16
#: Uncompressed bytes of ``trace.json`` (a trace of 8,300 pass calls takes ~3 MiB).
MAX_TRACE_JSON_BYTES = 64 * 2**20
#: Uncompressed bytes of ``ir.json`` (MobileNetV2's whole build: 18 MiB; a model with
#: 300 MiB of embedded weights still fits). Other members are never read.
MAX_IR_JSON_BYTES = 512 * 2**20
#: JSON values ``ir.json`` may hold, counted on the raw bytes before parsing, so that the
#: parse stays within the memory budget (the built-in ResNet's whole build holds 411,000,
#: DenseNet-121's 3,150,000, DenseNet-201's 6,540,000).
MAX_IR_JSON_VALUES = 7_000_000
#: JSON values of ``trace.json`` (a step record holds ~20; ResNet's whole trace: 162,000).
MAX_TRACE_JSON_VALUES = 4_000_000
#: Nodes of the IR graph, as saved (copies of one content stored once: the built-in
#: ResNet's whole build 54,500 of the 122,000 TVM writes; DenseNet-121's 417,500 of
#: 965,000; DenseNet-201's 868,000). What bounds a load's memory: TVM's own parse of the
#: text builds a JSON tree of a few maps per node, ~1.1 KiB per node at its peak all told
#: (DenseNet-201's whole build loads at +957 MiB, within the 1 GiB budget).
MAX_IR_NODES = 900_000
#: Longest chain of references in the IR graph (built-in models: 40-60). TVM's loader,
#: printer and hash recurse once per level: the loader survived 1,000 levels and
#: overflowed the C stack at 5,000 (measured).
MAX_IR_DEPTH = 512
#: Nodes of one function counted as a tree (a node reached twice counts twice): bounds
#: the work of printing it, which unfolds shared subexpressions.
MAX_FUNCTION_SIZE = 20_000_000
#: Steps of a trace, and the largest step index (an ONNX MobileNetV2 run through
#: FoldConstant with its weights as inputs: 8,300).
MAX_STEPS = 50_000
#: Nesting depth of a step (pass calls inside pass calls; real builds: under 20).
MAX_STEP_DEPTH = 256



# ---------------------------------------------------------------- type registry
# Static kinds of tvm_ffi (TVMFFITypeIndex) that a field stores as a plain JSON value.
_NONE, _INT, _BOOL, _FLOAT, _DTYPE = 0, 1, 2, 3, 5
_INT64 = (-(2**63), 2**63 - 1)
# Containers and plain values: read by the loader itself, never through an object
# creator. Their data is checked by _check_plain.
_PLAIN = frozenset({"None", "bool", "int", "float", "DataType", "Device", "ffi.String",
                    "ffi.Bytes", "ffi.Array", "ffi.List", "ffi.Map", "ffi.Dict", "ffi.Shape"})
# Namespaces of IR types. Others (runtime., script., testing., transform., ...) are not
# IR and never appear in what save_json writes for a module.
_IR_NAMESPACES = ("ir.", "relax.", "tirx.", "s_tir.", "prim.", "sym.", "te.", "target.")
# Types whose JSON form is their own (a "__data_from_json__" type attribute), with the
# check of that form; a type with such a loader that is not here is refused (ffi.Module
# would load compiled code).
# tvm_ffi object types that IR holds (tensor constants; integers beyond 64 bits).
_FFI_OBJECTS = frozenset({"ffi.Tensor", "ffi.BigInt"})
# Object fields whose C++ type is a nullable reference although their schema is not
# Optional, and where TVM itself writes null: spans (no source location) and call
# attributes (a call without attributes). The registry has no "nullable" flag.
_NULLABLE = frozenset({"ir.Span", "ir.Attrs"})
# (type, field) pairs that TVM writes as null although the field's type is not nullable:
# the thread IterVars of GPU kernels (``threadIdx.x``, ``blockIdx.x``) have no range.
_NULLABLE_FIELDS = frozenset({("tirx.IterVar", "dom")})
# (type, field) pairs typed Any, so null passes their schema, that TVM never writes as null
# and dereferences: a constant whose value is null loaded, passed TVM's well-formedness
# check and crashed the printer with SIGSEGV (found by benchmarks/fuzz_traces.py, seed 9).
_NOT_NULL_FIELDS = frozenset({("ir.GenericConst", "value")})
# Fields that hold a name (of a function, variable, buffer, attribute key): capped at
# MAX_NAME characters, other strings at MAX_STRING.
_NAME_FIELDS = frozenset({"name", "name_hint", "global_symbol"})
_DTYPE_TEXT = re.compile(r"^(|bool|handle|void|(u?int|float|bfloat|e\d+m\d+|float\d+_e\d+m\d+\w*)"
                    r"\d*(x\d+)?)$")


def _core() -> Any:
    import tvm  # noqa: F401 - registers TVM's types
    import tvm.relax
    import tvm.tirx  # noqa: F401
    from tvm_ffi import core

    return core


@lru_cache(maxsize=1)
def _registered() -> frozenset[str]:
    _core()
    from tvm_ffi.registry import get_registered_type_keys

    return frozenset(get_registered_type_keys())


@cache
def _type(key: str) -> tuple[int, tuple[int, ...], bool] | None:
    """(type index, ancestors, has a JSON form of its own) of an IR object type, or None
    for a key that is not one (plain values and containers included)."""
    if key in _PLAIN or key not in _registered() or not (
            key.startswith(_IR_NAMESPACES) or key in _FFI_OBJECTS):
        return None
    core = _core()
    info = core._lookup_or_register_type_info_from_type_key(key)
    own = core._lookup_type_attr(info.type_index, "__data_from_json__") is not None
    return info.type_index, tuple(info.type_ancestors), own


@cache
def _fields(key: str) -> dict[str, tuple[int, Any, bool]]:
    """name -> (static kind, type schema as JSON, has a default), ancestors' first."""
    core = _core()
    info = core._lookup_or_register_type_info_from_type_key(key)
    chain = []
    while info is not None:
        chain.append(info)
        info = info.parent_type_info
    out: dict[str, tuple[int, Any, bool]] = {}
    for t in reversed(chain):
        for f in t.fields:
            out[f.name] = (f.field_static_type_index,
                           None if f.ty is None else _schema(f.ty.to_json()),
                           bool(f.c_has_default))
    return out


@lru_cache(maxsize=1)
def _int_ranges() -> dict[tuple[str, str], range]:
    """Integer fields whose C++ type is an enum or a count: reflection only says "int",
    and a value out of range crashes the printer. Enum values come from the wheel's own
    Python enums."""
    import tvm.tirx

    iter_types = [getattr(tvm.tirx.IterVar, n) for n in (
        "DataPar", "ThreadIndex", "CommReduce", "Ordered", "Opaque", "Unrolled", "Vectorized",
        "Parallelized", "Tensorized")]
    ndim = range(-1, MAX_TENSOR_NDIM + 1)  # -1: unknown rank
    return {("tirx.For", "kind"): range(min(tvm.tirx.ForKind), max(tvm.tirx.ForKind) + 1),
            ("tirx.IterVar", "iter_type"): range(min(iter_types), max(iter_types) + 1),
            ("relax.TensorType", "ndim"): ndim, ("relax.ShapeType", "ndim"): ndim,
            ("ir.TupleGetItem", "index"): range(0, 2**31)}


@cache
def _required(key: str) -> frozenset[str]:
    """Fields of `key` that have no default: TVM's loader needs them."""
    return frozenset(n for n, (_, _, default) in _fields(key).items() if not default)


@cache
def _is_a(key: str, family: str) -> bool:
    """True when `key` is an IR object type that is `family` or derives from it."""
    t = _type(key)
    if t is None:
        return False
    if family in ("ffi.Object", "Object"):
        return True
    want = _core()._object_type_key_to_index(family)
    return want is not None and (t[0] == want or want in t[1])


# --------------------------------------------------------------------- checker
class _Graph:
    def __init__(self, nodes: list[Any], what: Callable[[str], TraceFileError]):
        self.nodes = nodes
        self.bad = what
        self.kind: list[str] = []
        self.memo: dict[tuple[Any, int | str], Any] = {}

    def fail(self, i: int, msg: str, field: str | None = None) -> TraceFileError:
        key = self.kind[i] if i < len(self.kind) else "?"
        where = f"node {i} ({key})" + (f", field {field!r}" if field is not None else "")
        return self.bad(f"ir.json {where}: {msg}")

    def ref(self, i: int, value: Any, field: str | None = None) -> int:
        if type(value) is not int or not 0 <= value < i:
            raise self.fail(i, f"refers to {value!r}; a reference is the index of an "
                               f"earlier node (0..{i - 1})", field)
        return value

    def conforms(self, schema: _Schema | None, j: int) -> str | None:
        """None when node `j` has the kind `schema` asks for, else what is wrong
        (memoized: an array of variables is referred to from many places)."""
        if schema is None:
            return None
        # the answer depends on node j itself only for containers (their elements are
        # checked), otherwise on its type alone
        # keyed by the schema's identity: the schemas live in _fields' cache for good, and
        # hashing a nested schema tuple on every reference was a tenth of the check
        key = (id(schema), j) if schema[0] in _CONTAINERS else (id(schema), self.kind[j])
        memo = self.memo.get(key, self)
        if memo is self:
            memo = self.memo[key] = self._conforms(schema, j)
        return memo

    def _conforms(self, schema: _Schema, j: int) -> str | None:
        origin, args = schema
        got = self.kind[j]
        if origin in ("Any", "ffi.Any"):
            return None
        if origin == "Optional":
            return None if got == "None" else self.conforms(args[0] if args else None, j)
        if got == "None":
            return None if origin in _NULLABLE else \
                f"is null, but TVM requires a {_show(schema)}"
        want = _PLAIN_SCHEMA.get(origin)
        if want is not None:
            if got not in want:
                return f"is a {got}, but TVM requires a {_show(schema)}"
            if got in ("ffi.Array", "ffi.List") and args:
                for k in self.nodes[j]["data"]:
                    why = self.conforms(args[0], k)
                    if why:
                        return f"has an element (node {k}) that {why}"
            if got in ("ffi.Map", "ffi.Dict") and len(args) == 2:
                for n, k in enumerate(self.nodes[j]["data"]):
                    why = self.conforms(args[n % 2], k)
                    if why:
                        return f"has a {'value' if n % 2 else 'key'} (node {k}) that {why}"
            return None
        if origin in ("Object", "ffi.Object"):
            return None if got not in ("bool", "int", "float", "DataType", "Device") else \
                f"is a {got}, but TVM requires an object"
        if origin in ("Callable", "ffi.Function"):
            return f"is a {got}; a saved trace holds no {_show(schema)}"
        if not _is_a(got, origin):
            return f"is a {got}, but TVM requires a {_show(schema)}"
        return None


_CONTAINERS = frozenset({"Array", "ffi.Array", "List", "ffi.List", "Map", "ffi.Map", "Dict",
                         "ffi.Dict", "Optional"})
#: A field's type schema (tvm_ffi's TypeSchema) as a hashable (origin, args) pair.
_Schema = tuple[str, tuple[Any, ...]]
# Schema origins that name a plain value or a container -> the node types that fit.
_PLAIN_SCHEMA = {
    "Array": ("ffi.Array",), "ffi.Array": ("ffi.Array",), "List": ("ffi.List",),
    "ffi.List": ("ffi.List",), "Map": ("ffi.Map",), "ffi.Map": ("ffi.Map",),
    "Dict": ("ffi.Dict",), "ffi.Dict": ("ffi.Dict",), "str": ("ffi.String",),
    "ffi.String": ("ffi.String",), "int": ("int", "ffi.BigInt"),
    "ffi.BigInt": ("int", "ffi.BigInt"), "bool": ("bool",), "float": ("float", "int"),
    "dtype": ("DataType",), "DataType": ("DataType",), "Device": ("Device",),
    "ffi.Shape": ("ffi.Shape",), "Tensor": ("ffi.Tensor",), "ffi.Tensor": ("ffi.Tensor",)}


def _schema(json_schema: dict[str, Any]) -> _Schema:
    return (str(json_schema.get("type")),
            tuple(_schema(a) for a in json_schema.get("args") or ()))


def _show(schema: _Schema) -> str:
    origin, args = schema
    return origin + (f"[{', '.join(_show(a) for a in args)}]" if args else "")


def references(node: dict[str, Any]) -> list[tuple[Any, Any]]:
    """(container, key) of every reference slot of a node of a graph that
    `check_ir_graph` accepted (a container's elements, an object's fields that TVM
    stores as node indices)."""
    key, data = node["type"], node.get("data")
    if key in ("ffi.Array", "ffi.List", "ffi.Map", "ffi.Dict") and isinstance(data, list):
        return [(data, k) for k in range(len(data))]
    if key in _PLAIN or not isinstance(data, dict):
        return []
    refs = reference_fields(key)
    return [(data, name) for name in data if name in refs]


@cache
def reference_fields(key: str) -> tuple[str, ...]:
    """The fields of an IR object type that TVM stores as node indices (those not of a
    plain static kind)."""
    return tuple(name for name, (kind, _, _) in _fields(key).items()
                 if kind not in (_NONE, _INT, _BOOL, _FLOAT, _DTYPE))


def modules_in(graph: Any, what: Callable[[str], TraceFileError]) -> int:
    """How many modules the parsed `ir.json` holds (the length of its root array),
    after checking the graph's outline; `check_ir_graph` checks the nodes."""
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list):
        raise what("ir.json is not a TVM JSON graph (an object with a 'nodes' list)")
    nodes = graph["nodes"]
    if len(nodes) > MAX_IR_NODES:
        raise what(f"ir.json has {len(nodes):,} nodes; at most {MAX_IR_NODES:,} are read")
    root = graph.get("root_index")
    if type(root) is not int or not 0 <= root < len(nodes):
        raise what(f"ir.json's root_index {root!r:.40} is not the index of a node "
                   f"(0..{len(nodes) - 1})")
    if not isinstance(graph.get("metadata", {}), dict):
        raise what("ir.json's metadata is not an object")
    node = nodes[root]
    if not isinstance(node, dict) or node.get("type") != "ffi.Array" or \
            not isinstance(node.get("data"), list):
        raise what(f"ir.json's root node {root} is not the array of a trace's modules")
    return len(node["data"])


def check_ir_graph(graph: Any, what: Callable[[str], TraceFileError]) -> None:
    """Check every node of the parsed `ir.json` of a trace (after `modules_in`).

    `what(message)` builds the error to raise. The graph must be what
    `tvm.ir.save_json(list_of_modules)` writes, within the limits of this module.
    """
    modules_in(graph, what)
    nodes, root = graph["nodes"], graph["root_index"]
    g = _Graph(nodes, what)
    depth = [0] * len(nodes)
    size = [0] * len(nodes)
    for i, node in enumerate(nodes):
        if not isinstance(node, dict) or not isinstance(node.get("type"), str):
            g.kind.append("?")
            raise g.fail(i, "a node is an object with a string 'type'")
        key = node["type"]
        g.kind.append(key)
        children = _check_node(g, i, key, node)
        d, s = 0, 1
        for c in children:
            if depth[c] > d:
                d = depth[c]
            s += size[c]
        depth[i], size[i] = d + 1, min(s, MAX_FUNCTION_SIZE + 1)
        if depth[i] > MAX_IR_DEPTH:
            raise g.fail(i, f"nests {depth[i]} levels deep; at most {MAX_IR_DEPTH} are read "
                            "(TVM recurses once per level)")
        if s > MAX_FUNCTION_SIZE and _type(key) is not None and _is_a(key, "ir.BaseFunc"):
            raise g.fail(i, f"unfolds to more than {MAX_FUNCTION_SIZE:,} nodes")
    if any(g.kind[k] != "ir.IRModule" for k in nodes[root]["data"]):
        raise g.fail(root, "the root of a trace's IR is an array of ir.IRModule nodes")


#: How :func:`_check_node` reads a field: (static kind, type schema, the valid integers or
#: None, a name field, a field TVM writes as null although its type is not nullable, a
#: field whose type allows null but TVM never writes one).
_FieldPlan = tuple[int, Any, range | None, bool, bool, bool]
_OWN_FORM, _ENUM = "own form", "enum"


@cache
def _plan(key: str) -> tuple[dict[str, _FieldPlan], frozenset[str], bool] | str | None:
    """What checking an object node of type `key` takes, looked up once per type: None
    for a type that is not IR, `_OWN_FORM`, `_ENUM`, or (field plans,
    required fields, an immediate whose value is checked against its type)."""
    t = _type(key)
    if t is None:
        return None
    if t[2]:
        return _OWN_FORM
    if _is_a(key, "ffi.Enum"):
        return _ENUM
    fields = {name: (static, schema, _int_ranges().get((key, name)), name in _NAME_FIELDS,
                     (key, name) in _NULLABLE_FIELDS, (key, name) in _NOT_NULL_FIELDS)
              for name, (static, schema, _) in _fields(key).items()}
    return fields, _required(key), key in ("ir.IntImm", "ir.FloatImm")


def _check_node(g: _Graph, i: int, key: str, node: dict[str, Any]) -> Sequence[int]:
    data = node.get("data")
    if key in _PLAIN:
        return _check_plain(g, i, key, data)
    plan = _plan(key)
    if plan is None:
        raise g.fail(i, "is not an IR type registered by this TVM (a trace holds IR "
                        "modules: ir., relax., tirx., s_tir., prim. ... types)")
    if isinstance(plan, str):
        if plan == _ENUM:
            raise g.fail(i, "an enum type never appears in a module's IR")
        check_own_form(g, i, key, data)
        return ()
    if not isinstance(data, dict):
        raise g.fail(i, "an object's data is a dict of its fields")
    fields, required, imm = plan
    kind = g.kind
    children = []
    for name, value in data.items():
        field = fields.get(name)
        if field is None:
            raise g.fail(i, f"{key} has no such field (its fields: "
                            f"{', '.join(fields) or 'none'})", name)
        static, schema, valid, is_name, nullable, not_null = field
        if static == _NONE:
            if value is not None:
                raise g.fail(i, "must be null", name)
        elif static == _BOOL:
            if type(value) is not bool:
                raise g.fail(i, f"must be true or false, not {value!r:.40}", name)
        elif static == _INT:
            if type(value) is not int or not _INT64[0] <= value <= _INT64[1]:
                raise g.fail(i, f"must be a 64-bit integer, not {value!r:.40}", name)
            if valid is not None and value not in valid:
                raise g.fail(i, f"is {value}, not in {valid.start}..{valid.stop - 1}", name)
        elif static == _FLOAT:
            if type(value) not in (int, float):
                raise g.fail(i, f"must be a number, not {value!r:.40}", name)
        elif static == _DTYPE:
            _check_dtype(g, i, value, name)
        else:
            if type(value) is not int or not 0 <= value < i:
                g.ref(i, value, name)  # raises, saying what a reference is
            j = value
            why = g.conforms(schema, j)
            if why and nullable and kind[j] == "None":
                why = None
            if not why and not_null and kind[j] == "None":
                why = f"is null, but TVM requires a value for {key}.{name}"
            if not why and is_name and kind[j] == "ffi.String" and \
                    len(g.nodes[j]["data"]) > MAX_NAME:
                why = f"is a name of {len(g.nodes[j]['data']):,} characters; at most " \
                      f"{MAX_NAME:,} are read (passlab.io.validate.MAX_NAME)"
            if why:
                raise g.fail(i, f"refers to node {j}, which {why}", name)
            children.append(j)
    if not required <= data.keys():
        missing = [n for n in required if n not in data]
        raise g.fail(i, f"lacks the required field(s) {', '.join(missing)}")
    if imm:
        check_imm(g, i, key, data)
    return children


def _check_plain(g: _Graph, i: int, key: str, data: Any) -> Sequence[int]:
    if key == "None":
        return ()
    if key == "bool":
        ok = type(data) is bool
    elif key == "int":
        ok = type(data) is int and _INT64[0] <= data <= _INT64[1]
    elif key == "float":
        ok = type(data) in (int, float)
    elif key == "DataType":
        _check_dtype(g, i, data, None)
        return ()
    elif key == "Device":
        ok = isinstance(data, list) and len(data) == 2 and all(
            type(x) is int and 0 <= x < 2**31 for x in data)
    elif key == "ffi.String":
        ok = isinstance(data, str)
        why = bad_text(data, MAX_STRING) if ok else None
        if why:
            raise g.fail(i, f"a string that {why}")
    elif key == "ffi.Bytes":
        ok = isinstance(data, str) and len(data) <= MAX_STRING and b64(data) is not None
    elif key == "ffi.Shape":
        ok = isinstance(data, list) and all(type(x) is int and 0 <= x < 2**62 for x in data)
    else:  # arrays, lists, maps, dicts: node indices
        if not isinstance(data, list):
            raise g.fail(i, "a container's data is a list of node indices")
        if key in ("ffi.Map", "ffi.Dict") and len(data) % 2:
            raise g.fail(i, "a map's data alternates keys and values (an even length)")
        return [g.ref(i, k) for k in data]
    if not ok:
        raise g.fail(i, f"holds {data!r:.60}, not a valid {key}")
    return ()


def _check_dtype(g: _Graph, i: int, value: Any, field: str | None) -> None:
    if not isinstance(value, str) or len(value) > 32 or not _DTYPE_TEXT.match(value):
        raise g.fail(i, f"{value!r:.40} is not a data type such as 'float32'", field)
    if not _known_dtype(value):
        raise g.fail(i, f"{value!r} is not a data type TVM knows", field)


@lru_cache(maxsize=1024)
def _known_dtype(value: str) -> bool:
    import tvm_ffi

    try:
        dt = tvm_ffi.dtype(value)
    except Exception:  # noqa: BLE001 - TVM's parser raises its own error types
        return False
    return dt.bits > 0 or value in ("", "void")
