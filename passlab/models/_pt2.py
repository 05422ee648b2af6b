"""Loading a `.pt2` archive (`torch.export.save`) without running code from it.

`torch.export.load` runs code from the file in several places: a weight or constant
whose payload config says `"use_pickle": true` is read with
`torch.load(weights_only=False)`; the example inputs are unpickled with
`weights_only=False` when the restricted unpickler refuses them; "opaque" constants
go through `pickle.loads`, torchbind objects through TorchScript's unpickler; an
AOTInductor package loads shared libraries; the symbolic shape expressions of the model
JSON go through `sympy.sympify`, which is `eval`; and an archive the new reader
cannot read is tried again in the old format, through the same paths.

Without trust, `load_untrusted` first reads the archive as data, with torch's own
archive reader (so that it sees exactly the members torch would), and refuses any of
these (`passlab.errors.UntrustedModelError`, which says `trust=True`); then it
calls the archive loader directly (no fall-back to the old format) with torch's
`TORCH_FORCE_WEIGHTS_ONLY_LOAD` set, so that every `torch.load` it makes uses the
restricted unpickler, which builds tensors and plain containers only.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from passlab.errors import ModelFormatError, UntrustedModelError

__all__ = ["check_archive", "load_untrusted", "weights_only"]

_OPT_IN = ("load it only if you trust whoever made it, with passlab.load(path, trust=True) "
           "(--trust on the command line, sweep(..., trust=True))")

#: Names a symbolic shape expression may use besides its symbols (``s0``, ``u1``): the
#: functions torch's deserializer hands ``sympy.sympify``, the ones sympy prints, and
#: ``Symbol`` with its assumptions (torch writes ``Symbol('s77', positive=True,
#: integer=True)``).
_SYMPY_NAMES = frozenset((
    'FloorDiv', 'ModularIndexing', 'Where', 'PythonMod', 'Mod', 'CleanDiv', 'CeilToInt',
    'FloorToInt', 'CeilDiv', 'LShift', 'RShift', 'PowByNatural', 'FloatPow', 'FloatTrueDiv',
    'IntTrueDiv', 'IsNonOverlappingAndDenseIndicator', 'TruncToFloat', 'TruncToInt',
    'RoundToInt', 'RoundDecimal', 'ToFloat', 'Identity', 'OpaqueUnaryFn_sqrt',
    'OpaqueUnaryFn_exp', 'OpaqueUnaryFn_log', 'BitwiseFn_bitwise_and', 'BitwiseFn_bitwise_or',
    'BitwiseFn_bitwise_xor', 'Max', 'Min', 'Eq', 'Ne', 'Lt', 'Le', 'Gt', 'Ge',
    'StrictLessThan', 'StrictGreaterThan', 'And', 'Or', 'Not', 'Abs', 'floor', 'ceiling',
    'sqrt', 'Piecewise', 'ITE', 'Integer', 'Rational', 'Float', 'True', 'False', 'oo', 'zoo',
    'nan', 'Symbol', 'positive', 'negative', 'nonnegative', 'nonpositive', 'integer', 'real',
    'finite', 'zero', 'nonzero', 'even', 'odd', 'rational',
))
_SYMBOL = re.compile(r"[A-Za-z]+[0-9]+")
_TOKEN = re.compile(r"\s+|(?P<num>[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)|"
                    r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>\*\*|[-+*/%(),<>=!&|~^])|"
                    r"(?P<str>'[A-Za-z_][A-Za-z0-9_]*'|\"[A-Za-z_][A-Za-z0-9_]*\")")
_MAX_EXPR = 4096  # characters of one shape expression


def unsafe_expression(text: Any) -> str | None:
    """Why `text` is not a plain symbolic-shape expression (`s0*2`,
    `Max(1, s0)`), or None: only numbers, operators, brackets, commas, quoted plain
    names, symbols named like `s0` and the names of `_SYMPY_NAMES` (no
    attribute access, no other string, no other name: nothing that could reach Python's
    builtins through `eval`)."""
    if not isinstance(text, str):
        return f"a {type(text).__name__}, not a string"
    if len(text) > _MAX_EXPR:
        return f"{len(text)} characters long (at most {_MAX_EXPR})"
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            return f"the character {text[pos]!r} at position {pos}"
        name = m["name"]
        if name is not None and name not in _SYMPY_NAMES and not _SYMBOL.fullmatch(name):
            return f"the name {name!r}"
        pos = m.end()
    return None


def _walk_expressions(node: Any) -> Iterator[Any]:
    """Every `expr_str` value in a model's JSON (what the deserializer sympifies)."""
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "expr_str":
                    yield v
                else:
                    stack.append(v)
        elif isinstance(x, list):
            stack.extend(x)


def check_archive(path: str | os.PathLike) -> None:
    """Refuse a `.pt2` archive that would make `torch.export.load` run code.

    Raises
    ------
    UntrustedModelError
        The archive holds pickled weights or constants, opaque or torchbind objects,
        AOTInductor libraries, an old-format layout, or a shape expression that is not
        plain arithmetic; the message names the member and says how to opt in.
    ModelFormatError
        The file is not a PyTorch archive at all.
    """
    import torch
    from torch.export.pt2_archive import constants as c
    from torch.export.pt2_archive._package import PT2ArchiveReader

    where = repr(str(path))
    try:
        reader = PT2ArchiveReader(str(path))
        names = reader.get_file_names()
        version = reader.read_string(c.ARCHIVE_VERSION_PATH) \
            if c.ARCHIVE_VERSION_PATH in names else None
    except Exception as exc:  # noqa: BLE001 - torch's reader says why in its own words
        raise ModelFormatError(
            f"{where} is not a PyTorch ExportedProgram archive: torch's archive reader "
            f"failed ({type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}). A "
            ".pt2 file is what torch.export.save writes.") from None

    def refuse(why: str) -> UntrustedModelError:
        return UntrustedModelError(
            f"{where} was not loaded: {why}, so reading it could run code from the file; "
            f"{_OPT_IN}")

    if version != c.ARCHIVE_VERSION_VALUE:
        raise refuse(f"it is not a current-format archive (archive_version "
                     f"{version!r}, expected {c.ARCHIVE_VERSION_VALUE!r}); torch reads older "
                     "formats through pickle, which can run any Python")
    for name in names:
        if name.startswith((c.AOTINDUCTOR_DIR, c.EXECUTORCH_DIR, c.MTIA_DIR,
                            c.XL_MODEL_WEIGHTS_DIR)):
            raise refuse(f"it holds compiled code ({name!r})")
    models = [n[len(c.MODELS_DIR):-len(".json")] for n in names
              if n.startswith(c.MODELS_DIR) and n.endswith(".json")]
    if not models:
        raise ModelFormatError(f"{where} holds no exported program ({c.MODELS_DIR}*.json); a "
                               ".pt2 file is what torch.export.save writes")
    for model in models:
        for legacy in (f"{c.WEIGHTS_DIR}{model}.pt", f"{c.CONSTANTS_DIR}{model}.pt"):
            if legacy in names:
                raise refuse(f"its weights are one pickle ({legacy!r}, the legacy layout; a "
                             "pickle can run any Python)")
        for fmt, prefixes in ((c.WEIGHTS_CONFIG_FILENAME_FORMAT, (c.WEIGHT_FILENAME_PREFIX,)),
                              (c.CONSTANTS_CONFIG_FILENAME_FORMAT,
                               (c.TENSOR_CONSTANT_FILENAME_PREFIX,))):
            config_name = fmt.format(model)
            if config_name not in names:
                continue  # torch refuses the archive itself
            config = _json(reader, config_name, where)
            entries = config.get("config") if isinstance(config, dict) else None
            if not isinstance(entries, dict):
                raise ModelFormatError(f"{where}: {config_name!r} is not a payload config "
                                       "({'config': {name: {...}}})")
            for fqn, meta in entries.items():
                if not isinstance(meta, dict):
                    raise ModelFormatError(f"{where}: {config_name!r} entry {fqn!r} is not "
                                           "an object")
                if meta.get("use_pickle") is not False:
                    raise refuse(f"{config_name!r} says {str(fqn)[:80]!r} is pickled "
                                 f"(\"use_pickle\": {json.dumps(meta.get('use_pickle'))}; "
                                 "torch unpickles it with weights_only=False, and a pickle "
                                 "can run any Python)")
                path_name = meta.get("path_name")
                if not isinstance(path_name, str) or not path_name.startswith(prefixes):
                    raise refuse(f"{config_name!r} stores {str(fqn)[:80]!r} as "
                                 f"{str(path_name)[:80]!r}, an object rather than a tensor")
        program = _json(reader, c.MODELS_FILENAME_FORMAT.format(model), where)
        for expr in _walk_expressions(program):
            why = unsafe_expression(expr)
            if why is not None:
                raise refuse(f"a symbolic shape in {c.MODELS_FILENAME_FORMAT.format(model)!r} "
                             f"is not plain arithmetic ({why}); torch evaluates these "
                             "strings with sympy.sympify")
    del torch


def _json(reader: Any, name: str, where: str) -> Any:
    try:
        return json.loads(reader.read_string(name))
    except Exception as exc:  # noqa: BLE001 - bad bytes or bad JSON: not a torch archive
        raise ModelFormatError(f"{where}: {name!r} is not JSON ({type(exc).__name__}); a "
                               ".pt2 file is what torch.export.save writes") from None


_ENV_LOCK = threading.Lock()


@contextmanager
def weights_only() -> Iterator[None]:
    """Every `torch.load` in the block uses torch's restricted unpickler (tensors and
    plain containers only), whatever `weights_only=` its caller passes."""
    keys = ("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    with _ENV_LOCK:
        saved = {k: os.environ.get(k) for k in keys}
        os.environ[keys[0]] = "1"
        os.environ.pop(keys[1], None)  # torch refuses both at once
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def load_untrusted(path: Path) -> Any:
    """The ExportedProgram in `path`, read without running code from the file."""
    import pickle

    from torch.export.pt2_archive._package import load_pt2

    check_archive(path)
    with weights_only():
        try:
            contents = load_pt2(str(path))
        except pickle.UnpicklingError as exc:
            raise UntrustedModelError(
                f"{str(path)!r} was not loaded: it holds a pickle that is not plain tensor "
                f"data ({str(exc).strip().splitlines()[0][:200]}), and reading it would run "
                f"code; {_OPT_IN}") from None
    programs = contents.exported_programs
    if "model" not in programs:
        raise ModelFormatError(f"{str(path)!r} holds no program named 'model' (it holds "
                               f"{', '.join(map(repr, programs)) or 'none'}); a .pt2 file is "
                               "what torch.export.save writes")
    return programs["model"]
