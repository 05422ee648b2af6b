"""Limits on the text and tensors of a saved trace, shared by the checks of `trace.json`
and `ir.json` (`passlab.io.validate` re-exports them)."""

from __future__ import annotations

__all__ = ["MAX_TENSOR_NDIM", "MAX_NAME", "MAX_STRING", "MAX_SOURCE_NAME", "bad_text"]

#: Dimensions of a tensor constant.
MAX_TENSOR_NDIM = 32
#: Characters of a name: a step, stage or pass name, a function or variable name in the
#: IR, a target, a version, an error type.
MAX_NAME = 4096
#: Characters of any other string: an IR string or attribute, a message, a warning, a note.
MAX_STRING = 65536
#: Characters of a source name (``ir.SourceName``: the ONNX node names or PyTorch module
#: paths that one binding came from, joined: they grow with the model's names).
MAX_SOURCE_NAME = 1 << 20


def bad_text(value: str, limit: int) -> str | None:
    """None when `value` has at most `limit` characters and is text (no lone UTF-16
    surrogate, which JSON's `\\ud800` escapes can carry and no terminal or HTML page can
    encode), else what is wrong with it."""
    if len(value) > limit:
        return f"is {len(value):,} characters long; at most {limit:,} are read"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "holds a lone UTF-16 surrogate (not text)"
    return None
