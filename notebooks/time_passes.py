"""The user pass of 09-where-time-goes.ipynb. It lives in a module, not a cell:
``passlab.attribute`` builds in worker processes, which import passes by module and name."""

from __future__ import annotations

#: How many times the slowed kernel does its work.
TIMES = 100


def slow_stem(mod):
    """A deliberately bad pass: the stem convolution (kernel ``conv2d``) does its whole
    work ``TIMES`` times, an outer serial loop around its body. Same outputs, slower."""
    import tvm
    from tvm import tirx
    from tvm.s_tir import stmt as sst

    found = [gv for gv in mod.get_global_vars() if gv.name_hint == "conv2d"]
    if not found:
        return mod
    func = mod[found[0]]
    realize, root = func.body, func.body.block
    loop = tirx.For(tirx.Var("again", "int64"), tirx.const(0, "int64"),
                    tirx.const(TIMES, "int64"), tirx.ForKind.SERIAL, root.body)
    block = sst.SBlock(root.iter_vars, root.reads, root.writes, root.name_hint, loop,
                       root.init, root.alloc_buffers, root.match_buffers, root.annotations)
    new = tvm.IRModule(dict(mod.functions_items()), attrs=mod.attrs,
                       global_infos=mod.global_infos)
    new[found[0]] = func.with_body(sst.SBlockRealize(realize.iter_values, realize.predicate,
                                                     block))
    return new
