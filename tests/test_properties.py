"""Properties over random models and random pipeline edits (hypothesis).

* Inserting identity passes anywhere changes neither the built module's outputs nor the
  recorded chain of real changes.
* Saving and loading a trace is exact, for random traces (and slices of them).
"""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

import tvm
import tvm_ffi
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import passlab
from passlab import Pipeline
from passlab.io import load_trace, save_trace

PROFILE = settings(max_examples=20, deadline=None, derandomize=True,
                   suppress_health_check=[HealthCheck.too_slow])


def same_object(mod):
    return mod


def fresh_copy(mod):
    """Identity, but a new module object holding the same functions."""
    return tvm.IRModule(dict(mod.functions.items()), attrs=mod.attrs)


def tvm_identity(name):
    # a TVM pass is recorded under its PassInfo name, so it carries the entry's name
    return tvm.transform.module_pass(lambda mod, ctx: mod, opt_level=0, name=name)


IDENTITIES = {"same_object": lambda name: same_object, "fresh_copy": lambda name: fresh_copy,
              "tvm_identity": tvm_identity}
# every pass and stage boundary of Relax and TIR, but the codegen stage (it takes source
# emitters, IRModule -> str) and device_finalize (it runs on device functions only: none
# on a CPU target, so a pass there never runs)
_SKIP = ("codegen", "device_finalize")
ANCHORS = tuple(
    a for a in Pipeline.default("llvm").names + Pipeline.default("llvm").stage_names
    if a not in _SKIP and not any(a in [e.name for e in st.passes]
                                  for st in Pipeline.default("llvm").tir_stages
                                  if st.name in _SKIP))

sizes = st.tuples(st.integers(1, 4), st.integers(1, 12), st.integers(1, 12), st.integers(1, 6))
insertion = st.tuples(st.sampled_from(sorted(IDENTITIES)), st.sampled_from(ANCHORS),
                      st.sampled_from(["before", "after"]))
insertions = st.lists(insertion, min_size=1, max_size=4)


@cache
def reference(size: tuple[int, int, int, int]) -> passlab.Build:
    return passlab.build(passlab.models.mlp(*size))


def edited(insert) -> Pipeline:
    pipe = Pipeline.default("llvm")
    for k, (kind, anchor, where) in enumerate(insert):
        name = f"identity_{k}_{kind}"
        pipe = pipe.insert(IDENTITIES[kind](name), name=name, **{where: anchor})
    return pipe


def real_changes(trace) -> list:
    return [(s.label, s.functions_changed) for s in trace.top_level()
            if s.changed and not s.name.startswith("identity_")]


@PROFILE
@given(size=sizes, insert=insertions)
def test_identity_passes_change_nothing(size, insert):
    ref = reference(size)
    b = passlab.build(passlab.models.mlp(*size), edited(insert))
    assert passlab.max_abs_diff(b.run(), ref.run()) == 0
    assert real_changes(b.trace) == real_changes(ref.trace)
    ids = [s for s in b.trace.top_level() if s.name.startswith("identity_")]
    assert len(ids) == len(insert)
    assert all(s.origin == "user" and not s.changed for s in ids)


def same_module(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return tvm_ffi.structural_equal(a, b, map_free_vars=True)


FIELDS = ("index", "name", "depth", "parent", "stage", "kind", "origin", "occurrence",
          "seconds", "failed")


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(size=sizes, insert=st.lists(insertion, max_size=3), fail=st.booleans(),
       cut=st.tuples(st.integers(0, 100), st.integers(0, 100)))
def test_save_load_round_trip(size, insert, fail, cut):
    pipe = edited(insert)
    if fail:
        pipe = pipe.insert(lambda mod: 0, after="FuseTIR", name="fails_here")
    try:
        trace = passlab.build(passlab.models.mlp(*size), pipe).trace
    except passlab.BuildError as err:
        trace = err.trace
    lo, hi = sorted(cut)
    for t in (trace, trace[lo * len(trace) // 100: hi * len(trace) // 100]):
        with tempfile.TemporaryDirectory() as tmp:
            u = load_trace(save_trace(t, Path(tmp) / "t.zip"))
        assert len(u) == len(t)
        for s, r in zip(t, u):
            assert [getattr(r, f) for f in FIELDS] == [getattr(s, f) for f in FIELDS]
            assert same_module(s.before, r.before) and same_module(s.after, r.after)
            assert r.functions_changed == s.functions_changed
        assert u.pipeline.rows() == t.pipeline.rows()
        assert (u.failure is None) == (t.failure is None)
        if t.failure is not None:
            assert u.failure.to_text() == t.failure.to_text()
