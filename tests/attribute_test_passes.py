"""User passes for tests/test_attribute.py: attribute()'s worker processes import them by
module and name, so they live in a module, not in the test file's functions."""

from __future__ import annotations

#: How many times the slowed kernel does its work: about 8 ms a run, so that the scheduler
#: time slices a loaded 2-core machine inserts into the other rows' runs (a few ms each,
#: the suite's other worker beside attribute's two) cannot outweigh it; at 20,000x (2.8
#: ms) CI once ranked FuseOps first.
TIMES = 60000


def slow_transpose(mod):
    """Makes the MLP's first weight transpose (kernel ``transpose``, there with and
    without fusion) do its whole work ``TIMES`` times (an outer serial loop around its
    root block's body): same outputs, ``TIMES`` x the time."""
    import tvm
    from tvm import tirx
    from tvm.s_tir import stmt as sst

    found = [gv for gv in mod.get_global_vars() if gv.name_hint == "transpose"]
    if not found:
        return mod
    gv = found[0]
    func = mod[gv]
    realize = func.body
    root = realize.block
    loop = tirx.For(tirx.Var("repeat", "int64"), tirx.const(0, "int64"),
                    tirx.const(TIMES, "int64"), tirx.ForKind.SERIAL, root.body)
    block = sst.SBlock(root.iter_vars, root.reads, root.writes, root.name_hint, loop,
                       root.init, root.alloc_buffers, root.match_buffers, root.annotations)
    body = sst.SBlockRealize(realize.iter_values, realize.predicate, block)
    new = tvm.IRModule(dict(mod.functions_items()), attrs=mod.attrs,
                       global_infos=mod.global_infos)
    new[gv] = func.with_body(body)
    return new


def identity(mod):
    """Changes nothing: inserted as the last Relax pass, its row's re-run runs no Relax
    pass at all."""
    return mod
