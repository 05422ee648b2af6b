"""Pass cards: what a pass does, why the compiler needs it and what to look for in its diff.

Every pass of TVM 0.27's default pipelines (llvm, both variants; cuda; c; Relax and TIR)
has a card written for passlab in `cards.toml` beside this module. A pass without one
falls back to its TVM docstring; a user pass is explained by its own docstring.

Two results, two questions: `explain` answers "what does this pass do?" with a
`Card` (about the pass in general; no build needed), and
`passlab.Step.explain` answers "what did this pass do here?" with an
`Explanation` (one recorded step: a sentence with this build's
numbers, and the pass's card as `.card`; see `passlab.analysis._explain_steps`).
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from passlab import _render, _tvm
from passlab._tvm import passinfo
from passlab.analysis import _explain_render as _html
from passlab.errors import unknown

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as the tomli package
    import tomli as tomllib

__all__ = ["Card", "explain", "cards", "card_summary", "SOURCES", "CSS"]

#: The stylesheet of cards and Explain strips (a page with many strips includes it once).
CSS = _html.CSS

#: Where a card's text comes from ("llvm": a generic card for one of LLVM's own passes
#: that passlab has no card of its own for).
SOURCES = ("passlab", "tvm-docstring", "user", "llvm")
_FIELDS = {"summary", "details", "stage", "see_also", "doc", "snippet"}


@dataclass(frozen=True)
class Card(_render.Displayable):
    """What one pass does, for a reader who has never heard of it.

    `source` is "passlab" (a card written for passlab), "tvm-docstring" (a TVM pass
    passlab has no card for: its docstring) or "user" (a user pass: its own docstring).
    `doc` names the TVM API page of the pass (`tvm.relax.transform.FuseOps`);
    `snippet` is a small before/after fragment of TVMScript written as a diff.
    """

    name: str
    summary: str
    details: str = ""
    stage: str = ""
    see_also: tuple[str, ...] = ()
    doc: str = ""
    snippet: str = ""
    source: str = "passlab"

    def to_text(self) -> str:
        head = f"{self.name}" + (f" (stage {self.stage})" if self.stage else "")
        lines = [head, self.summary]
        if self.details:
            lines += ["", self.details]
        if self.snippet:
            lines += ["", "Example:", *("  " + line for line in self.snippet.splitlines())]
        if self.see_also:
            lines += ["", "See also: " + ", ".join(self.see_also)]
        if self.doc:
            lines.append(f"{'LLVM pass' if self.stage == 'llvm' else 'TVM API'}: {self.doc}")
        lines.append(f"(source: {self.source})")
        return "\n".join(lines)

    def to_html(self) -> str:
        return _html.card_html(self)


@functools.lru_cache(maxsize=1)
def _authored() -> Mapping[str, Card]:
    text = resources.files("passlab.analysis").joinpath("cards.toml").read_bytes()
    data = tomllib.loads(text.decode("utf-8"))
    out = {}
    for name, fields in data.items():
        extra = set(fields) - _FIELDS
        if extra or "summary" not in fields:
            raise ValueError(f"cards.toml: card {name!r} has unknown fields {sorted(extra)} "
                             f"or no summary; fields are {sorted(_FIELDS)}")
        out[name] = Card(name, fields["summary"].strip(), fields.get("details", "").strip(),
                         fields.get("stage", ""), tuple(fields.get("see_also", ())),
                         fields.get("doc", ""), fields.get("snippet", "").strip("\n"), "passlab")
    return out


def cards() -> Mapping[str, Card]:
    """Every card written for passlab, by pass name (a read-only mapping)."""
    return _authored()


def _base(name: str) -> str:
    base, sep, k = name.rpartition("#")
    return base if sep and k.isdigit() else name


def _from_docstring(name: str, doc: str, source: str, path: str = "") -> Card:
    paragraphs = [p.strip() for p in doc.strip().split("\n\n") if p.strip()]
    if not paragraphs:
        what = "user pass" if source == "user" else "pass"
        return Card(name, f"A {what} without a docstring: passlab cannot say what it does.",
                    stage="user" if source == "user" else "", doc=path, source=source)
    summary = " ".join(paragraphs[0].split())
    details = "\n\n".join(" ".join(p.split()) for p in paragraphs[1:])
    return Card(name, summary, details, "user" if source == "user" else "", (), path, "", source)


def explain(what: Any) -> Card:
    """The card of a pass: by name (`"FuseOps"`, `"tirx.LowerIntrin"`, `"FuseOps#1"`),
    a TVM pass object, or a user pass (a function `IRModule -> IRModule`).

    A card says what the pass does in general. What one recorded run of it did is
    `step.explain()`, an `Explanation` whose `.card` is
    this card.

    Parameters
    ----------
    what : str, tvm.transform.Pass or callable
        The pass. A name passlab has no card for falls back to TVM's docstring of the
        pass; a user function is explained by its own docstring.

    Returns
    -------
    Card
        With `name`, `summary`, `details`, `stage`, `see_also`, `doc`,
        `snippet` and `source` ("passlab", "tvm-docstring" or "user").

    Raises
    ------
    UnknownNameError
        When `what` is a name that is neither a card nor a TVM pass.

    Examples
    --------
    >>> import passlab
    >>> card = passlab.explain("FuseOps")
    >>> card.stage, card.source, card.doc
    ('legalize', 'passlab', 'tvm.relax.transform.FuseOps')
    >>> passlab.explain("FuseOps#2").name
    'FuseOps'
    """
    if isinstance(what, str):
        return _by_name(what)
    if _tvm.is_pass(what):
        return _by_name(_tvm.pass_name(what))
    if callable(what):
        name = getattr(what, "__name__", None) or type(what).__name__
        return _from_docstring(name, getattr(what, "__doc__", None) or "", "user")
    raise TypeError(f"explain() takes a pass name, a TVM pass or a user pass function, "
                    f"not {type(what).__name__}")


def _by_name(name: str) -> Card:
    base = _base(name.strip())
    card = _authored().get(base)
    if card is not None:
        return card
    found = passinfo.pass_doc(base)
    if found is not None:
        return _from_docstring(base, found[1], "tvm-docstring", found[0])
    raise unknown("pass", base, sorted(_authored()),
                  extra="(no passlab card and no TVM pass by that name)")


def llvm_card(name: str) -> Card:
    """The card of one of LLVM's own passes (a step of level "llvm"): passlab's, or a
    generic one naming the pass's C++ class."""
    card = _authored().get(_base(name))
    if card is not None:
        return card
    base = _base(name)
    return Card(base, "One of LLVM's own optimization passes, run by TVM's llvm code "
                      "generator on the module it emits.",
                "passlab has no card of its own for this pass. Its diff shows the LLVM IR of "
                "each function it changed, before and after; LLVM's documentation of its "
                "passes (llvm.org/docs/Passes.html) and the pass's source describe it.",
                "llvm", tuple(n for n in ("InstCombinePass", "SimplifyCFGPass") if n != base),
                f"llvm::{base}", "", "llvm")


def card_summary(name: str) -> str:
    """The one-sentence summary of the pass `name` ("" when nothing is known)."""
    try:
        return _by_name(name).summary
    except Exception:  # a user pass or an unknown name: an empty cell, not an error
        return ""


def card_for(name: str, user_pass: Callable | None = None, origin: str = "tvm") -> Card:
    """The card for a recorded step: a user pass's docstring when the function is known,
    else the card or TVM docstring by name; never raises."""
    if user_pass is not None and not _tvm.is_pass(user_pass):
        # named as the pipeline and the trace name it (a lambda is "user_lambda" there)
        return dataclasses.replace(explain(user_pass), name=_base(name))
    return _safe(name, origin)


def _safe(name: str, origin: str) -> Card:
    try:
        return _by_name(name)
    except Exception:
        source = "user" if origin == "user" else "tvm-docstring"
        return _from_docstring(_base(name), "", source)
