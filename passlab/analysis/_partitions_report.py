"""The result of `passlab.analysis.partitions.partitions`: operator calls
(`OpCall`), offloaded regions (`Region`), tensors crossing between host and
accelerator (`Crossing`), coverage per backend (`Coverage`), and the
`PartitionReport` that holds them, with its text, HTML and DataFrame forms.

Plain frozen data: this module reads no IR (that is
`passlab.analysis._partitions_scan`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from passlab import _render
from passlab._sequence import NamedSequence

#: The name coverage and crossings use for everything not offloaded.
HOST = "host"


# ------------------------------------------------------------------------------ data
@dataclass(frozen=True)
class OpCall:
    """One operator call; `backend` is None on the host."""

    index: int
    op: str
    var: str
    backend: str | None
    region: str | None
    composite: str | None
    shape: tuple[int | str, ...] | None
    dtype: str
    flops: int | None
    bytes: int | None

    @property
    def offloaded(self) -> bool:
        return self.backend is not None


@dataclass(frozen=True)
class Crossing:
    """A tensor that crosses between the host and a region (`direction` "in": into the
    region, "out": back to the host). `kind`: input, weight, constant or activation;
    `peer`: where it comes from (in) or goes to (out): `host`, a region, `output`
    or a parameter."""

    region: str
    direction: str
    tensor: str
    kind: str
    shape: tuple[int | str, ...] | None
    dtype: str
    bytes: int | None
    peer: str

    @property
    def shape_text(self) -> str:
        return _render.shape_text(self.shape)


@dataclass(frozen=True)
class Region:
    """One offloaded region: a call of a `Codegen` (or `Composite`) function."""

    name: str
    backend: str
    var: str
    composites: tuple[str, ...]
    ops: tuple[OpCall, ...]
    inputs: tuple[Crossing, ...]
    outputs: tuple[Crossing, ...]

    @property
    def op_names(self) -> tuple[str, ...]:
        return tuple(o.op for o in self.ops)

    @property
    def flops(self) -> int:
        return sum(o.flops or 0 for o in self.ops)

    @property
    def bytes_in(self) -> int:
        return sum(c.bytes or 0 for c in self.inputs)

    @property
    def bytes_out(self) -> int:
        return sum(c.bytes or 0 for c in self.outputs)


@dataclass(frozen=True)
class Coverage:
    """What one backend (or the host) takes, against the whole function."""

    backend: str
    regions: int
    ops: int
    ops_total: int
    flops: int
    flops_total: int
    bytes: int
    bytes_total: int
    bytes_in: int = 0
    bytes_out: int = 0

    @staticmethod
    def _pct(a: int, b: int) -> float:
        return 100.0 * a / b if b else 0.0

    @property
    def ops_pct(self) -> float:
        return self._pct(self.ops, self.ops_total)

    @property
    def flops_pct(self) -> float:
        return self._pct(self.flops, self.flops_total)

    @property
    def bytes_pct(self) -> float:
        return self._pct(self.bytes, self.bytes_total)


_COVERAGE_HEADER = ["backend", "regions", "ops", "ops %", "FLOPs", "FLOPs %", "bytes",
                    "bytes %", "traffic in", "traffic out"]


def _coverage_row(c: Coverage) -> list[str]:
    size, host = _render.human_bytes, c.backend == HOST
    return [c.backend, "" if host else str(c.regions), f"{c.ops}/{c.ops_total}",
            f"{c.ops_pct:.1f}%", str(c.flops), f"{c.flops_pct:.1f}%", size(c.bytes),
            f"{c.bytes_pct:.1f}%", "" if host else size(c.bytes_in),
            "" if host else size(c.bytes_out)]


@dataclass(frozen=True)
class PartitionReport(NamedSequence[Region], _render.Displayable):
    """The partitions of one Relax function (see `partitions`).

    Behaves like a sequence of `Region` (one per call of an offloaded function):
    `len`, iteration, indexing by position, by function name (its first call) or by
    the call's variable.
    """

    function: str
    ops: tuple[OpCall, ...]
    regions: tuple[Region, ...]
    notes: tuple[str, ...] = field(default=())

    # ------------------------------------------------------------------ sequence
    def _items(self) -> tuple[Region, ...]:
        return self.regions

    def _by_name(self, name: str) -> Region:
        for r in self.regions:
            if name in (r.name, r.var):
                return r
        from passlab.errors import unknown

        raise unknown("region", name, [r.name for r in self.regions] + [r.var for r in self.regions])

    # ------------------------------------------------------------------ summaries
    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.backend for r in self.regions))

    @property
    def crossings(self) -> tuple[Crossing, ...]:
        return tuple(c for r in self.regions for c in r.inputs + r.outputs)

    @property
    def host_ops(self) -> tuple[OpCall, ...]:
        return tuple(o for o in self.ops if not o.offloaded)

    def coverage(self, backend: str | None = None) -> Coverage:
        """What `backend` takes (default: the only backend); `"host"` for the rest."""
        if backend is None:
            if len(self.backends) != 1:
                raise ValueError(f"the function has regions of {len(self.backends)} backends "
                                 f"({', '.join(self.backends) or 'none'}); name one")
            backend = self.backends[0]
        if backend != HOST and backend not in self.backends:
            from passlab.errors import unknown

            raise unknown("backend", backend, self.backends + (HOST,))
        mine = [o for o in self.ops if (o.backend or HOST) == backend]
        regions = [r for r in self.regions if r.backend == backend]
        return Coverage(
            backend, len(regions), len(mine), len(self.ops),
            sum(o.flops or 0 for o in mine), sum(o.flops or 0 for o in self.ops),
            sum(o.bytes or 0 for o in mine), sum(o.bytes or 0 for o in self.ops),
            sum(r.bytes_in for r in regions), sum(r.bytes_out for r in regions))

    def coverages(self) -> tuple[Coverage, ...]:
        """One `Coverage` per backend, then the host."""
        return tuple(self.coverage(b) for b in self.backends) + (self.coverage(HOST),)

    def summary(self) -> str:
        n = len(self.regions)
        who = ", ".join(self.backends) if self.backends else "no backend"
        out = (f"Partitions of {self.function}: {n} offloaded region{'s' if n != 1 else ''} "
               f"({who}), {len(self.ops)} operator calls")
        if self.regions:
            moved = sum(r.bytes_in + r.bytes_out for r in self.regions)
            out += f", {_render.human_bytes(moved)} crossing host/accelerator"
        return out

    # --------------------------------------------------------------------- tables
    def _region_rows(self) -> list[list[str]]:
        return [[str(i), _short(r.name), r.backend, r.var, str(len(r.composites)),
                 _op_counts(r.op_names), str(len(r.inputs)), str(len(r.outputs)),
                 _render.human_bytes(r.bytes_in), _render.human_bytes(r.bytes_out), str(r.flops)]
                for i, r in enumerate(self.regions)]

    _REGION_HEADER: ClassVar[list[str]] = ["#", "region", "backend", "call", "composites", "ops", "inputs",
                      "outputs", "bytes in", "bytes out", "FLOPs"]
    _OP_HEADER: ClassVar[list[str]] = ["composite", "op", "result", "shape", "dtype", "FLOPs", "bytes"]
    _CROSS_HEADER: ClassVar[list[str]] = ["dir", "tensor", "kind", "shape", "dtype", "bytes", "from/to"]

    @staticmethod
    def _op_rows(ops: Sequence[OpCall]) -> list[list[str]]:
        return [[o.composite or "", o.op, o.var,
                 "?" if o.shape is None else "x".join(map(str, o.shape)), o.dtype,
                 "?" if o.flops is None else str(o.flops),
                 "?" if o.bytes is None else _render.human_bytes(o.bytes)] for o in ops]

    @staticmethod
    def _cross_rows(r: Region) -> list[list[str]]:
        return [[("-> " + r.backend) if c.direction == "in" else "-> host", c.tensor, c.kind,
                 c.shape_text, c.dtype, "?" if c.bytes is None else _render.human_bytes(c.bytes),
                 c.peer]
                for c in r.inputs + r.outputs]

    def to_text(self, detail: bool = True) -> str:
        """Coverage, the region table and (`detail`) one table per region."""
        parts = [self.summary(), "",
                 _render.text_table(_COVERAGE_HEADER, [_coverage_row(c) for c in self.coverages()])]
        if self.regions:
            parts += ["", "Regions", _render.text_table(self._REGION_HEADER, self._region_rows())]
        if detail:
            for r in self.regions:
                parts += ["", f"Region {r.name} ({r.backend}), called as {r.var}",
                          _render.text_table(self._OP_HEADER, self._op_rows(r.ops)),
                          _render.text_table(self._CROSS_HEADER, self._cross_rows(r))]
        parts += [f"note: {n}" for n in self.notes]
        return "\n".join(parts)

    def to_html(self) -> str:
        esc = _render.esc
        out = [_render.html_table(_COVERAGE_HEADER, [_coverage_row(c) for c in self.coverages()],
                                  caption=self.summary())]
        if self.regions:
            out.append(_render.html_table(self._REGION_HEADER, self._region_rows(),
                                          caption="Regions"))
        for r in self.regions:
            out.append(
                f"<details><summary>{esc(r.name)} ({esc(r.backend)}, called as "
                f"{esc(r.var)}): {esc(_op_counts(r.op_names, 200))}</summary>"
                + _render.html_table(self._OP_HEADER, self._op_rows(r.ops), caption="operators")
                + _render.html_table(self._CROSS_HEADER, self._cross_rows(r),
                                     caption="tensors crossing") + "</details>")
        out += [f'<div class="passlab-note">{esc(n)}</div>' for n in self.notes]
        return "".join(out)

    def to_dataframe(self, table: str = "ops") -> Any:
        """`table`: "ops" (one row per operator call), "regions", "crossings" or
        "coverage"."""
        import pandas as pd

        if table == "ops":
            return pd.DataFrame([o.__dict__ for o in self.ops]).set_index("index")
        if table == "regions":
            return pd.DataFrame([dict(region=r.name, backend=r.backend, call=r.var,
                                      composites=len(r.composites), ops=len(r.ops),
                                      inputs=len(r.inputs), outputs=len(r.outputs),
                                      bytes_in=r.bytes_in, bytes_out=r.bytes_out,
                                      flops=r.flops) for r in self.regions])
        if table == "crossings":
            return pd.DataFrame([c.__dict__ for c in self.crossings])
        if table == "coverage":
            return pd.DataFrame([dict(c.__dict__, ops_pct=c.ops_pct, flops_pct=c.flops_pct,
                                      bytes_pct=c.bytes_pct) for c in self.coverages()]
                                ).set_index("backend")
        from passlab.errors import unknown

        raise unknown("table", table, ("ops", "regions", "crossings", "coverage"))

    def __repr__(self) -> str:
        return (f"PartitionReport(function={self.function!r}, regions={len(self.regions)}, "
                f"backends={list(self.backends)}, ops={len(self.ops)})")


def _short(name: str, width: int = 48) -> str:
    """Merged regions are named after every op they hold; tables show the start."""
    return name if len(name) <= width else name[: width - 3] + "..."


def _op_counts(ops: Sequence[str], width: int = 60) -> str:
    """`nn.conv2d x20, nn.relu x17, add` in order of first appearance."""
    counts: dict[str, int] = {}
    for o in ops:
        counts[o] = counts.get(o, 0) + 1
    text = ", ".join(o if n == 1 else f"{o} x{n}" for o, n in counts.items())
    return _short(text, width)
