"""Provenance, blame, the pass table, explain_step and the pane renderer on a hand-made
trace (tests/synthetic.py: a three-operator model in TVMScript, six steps, no build): each
outcome asserted exactly, from which operator lands in which kernel to the table's rows."""

from __future__ import annotations

import html
import re

import pytest
from synthetic import STEPS, tag_kernels, tiny_trace

import passlab
from passlab.analysis._explain_steps import explain_step
from passlab.research.blame import blame
from passlab.views.explorer_panes import PaneRenderer

KERNEL = "fused_matmul_add_relu"


@pytest.fixture(scope="module")
def trace() -> passlab.Trace:
    return tiny_trace()


def _text(markup: str) -> str:
    """What a reader sees of some HTML: no styles, no tags, one space between words."""
    markup = re.sub(r"<style.*?</style>", " ", markup, flags=re.S).replace("<wbr>", "")
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", markup))).strip()


def test_the_trace_is_what_the_fixture_says(trace):
    assert [(s.index, s.name, s.kind, s.origin) for s in trace] == [
        (0, "passlab.pipeline", "container", "tvm"), (1, "legalize", "container", "tvm"),
        *[(i + 2, name, "pass", "user" if name == "tag_kernels" else "tvm")
          for i, name in enumerate(STEPS)]]
    assert [s.name for s in trace.main_chain()] == list(STEPS)
    assert not trace.find("FoldConstant").changed


def test_provenance_maps_each_operator_to_the_one_kernel(trace):
    prov = passlab.provenance(trace)
    assert [(o.op, o.operator, o.kernels, o.fate) for o in prov] == [
        ("mm", "matmul", (KERNEL,), "kernel"), ("biased", "add", (KERNEL,), "kernel"),
        ("out", "nn.relu", (KERNEL,), "kernel")]
    assert prov["out"].history == (("LegalizeOps", "calls relu"),
                                   ("FuseOps", f"moved into {KERNEL}"),
                                   ("FuseTIR", f"merged into kernel {KERNEL}"))
    assert prov.to_text().splitlines()[0] == "Provenance of 3 operator calls of main: 1 kernels"


def test_blame_names_the_passes_that_made_rewrote_and_removed(trace):
    assert [(e.step.name, e.action) for e in blame(trace, KERNEL)] == [
        ("FuseOps", "created"), ("FuseTIR", "rewritten"), ("tag_kernels", "rewritten")]
    assert blame(trace, "matmul").summary() == (
        "matmul (function): not in the input model; created by LegalizeOps; rewritten by "
        "AnnotateTIROpPattern; removed by FuseTIR")
    assert blame(trace, "mm").summary() == (
        "mm (binding): in the input model. In main: rewritten by LegalizeOps; removed by "
        f"FuseOps. In {KERNEL}: created by FuseOps; removed by FuseTIR")
    with pytest.raises(passlab.errors.UnknownNameError, match="unknown function, binding or "
                       "tensor 'lv'. Known function, binding or tensor names: add, "):
        blame(trace, "lv")


def test_pass_table_rows(trace):
    table = passlab.pass_table(trace)
    keys = ("index", "name", "origin", "changed", "added", "removed", "modified",
            "bindings_after", "prim_funcs_after", "ir_lines", "peak_bytes")
    assert [tuple(r[k] for k in keys) for r in table] == [
        (2, "LegalizeOps", "tvm", True, 3, 0, 1, 3, 3, 42, 48),
        (3, "AnnotateTIROpPattern", "tvm", True, 0, 0, 3, 3, 3, 42, 48),
        (4, "FoldConstant", "tvm", False, 0, 0, 0, 3, 3, 42, 48),
        (5, "FuseOps", "tvm", True, 1, 0, 1, 4, 3, 50, 48),
        (6, "FuseTIR", "tvm", True, 0, 3, 2, 1, 1, 34, 24),  # two live 2x3 float32, then one
        (7, "tag_kernels", "user", True, 0, 0, 1, 1, 1, 34, 24)]
    assert [r["name"] for r in table if r["peak_exact"]] == list(STEPS)
    assert "FoldConstant" not in table.to_text()  # changed nothing: hidden by default
    assert re.search(r"^4 +FoldConstant +legalize +50\.00 +no change +3 +3 +42 +48 B$",
                     table.to_text(changed_only=False), re.M)


def test_explain_step_states_what_each_step_did(trace):
    said = {s.name: (explain_step(s).kind, explain_step(s).sentence) for s in trace.main_chain()}
    assert said["LegalizeOps"] == ("specific", (
        "LegalizeOps turned 3 high-level operator calls into R.call_tir of 3 new TIR "
        "functions (matmul, add, relu); no operator call remains."))
    assert said["FoldConstant"][0] == "no change"
    assert said["FuseOps"] == ("specific", (
        f"FuseOps grouped 3 kernel calls into 1 fused function ({KERNEL}); 0 calls stay "
        "unfused."))
    assert explain_step(trace.find("FuseOps")).facts == (("grouped", 3), ("fused", 1),
                                                         ("unfused", 0))
    assert said["tag_kernels"][0] == "generic"
    # a user pass is explained by its own docstring when the pipeline is given
    user = trace.find("tag_kernels")
    pipe = passlab.Pipeline.default("llvm").insert(tag_kernels, after="FuseTIR")
    assert explain_step(user, pipe).summary == tag_kernels.__doc__.split("\n")[0]
    assert explain_step(user).summary == ("A user pass without a docstring: passlab cannot "
                                          "say what it does.")


def test_pane_renderer_panes(trace):
    panes = PaneRenderer(trace)
    fuse, fold, tag = (trace.find(n).index for n in ("FuseOps", "FoldConstant", "tag_kernels"))
    assert _text(panes.pane("diff", fuse)).startswith(
        "FuseOps : 2 functions changed: 1 added, 0 removed, 1 modified, 0 renamed "
        "( +13 -5 lines) modified main relax +3 -5")
    assert _text(panes.pane("diff", fold)) == "FoldConstant : no changes"
    assert _text(panes.pane("diff", tag)).startswith(
        f"tag_kernels : 1 function changed: 0 added, 0 removed, 1 modified, 0 renamed "
        f"( +1 -1 lines) modified {KERNEL} tir +1 -1")
    graph = _text(panes.pane("graph", trace.find("FuseTIR").index))
    assert graph.startswith("fused graph of main : 3 nodes, 2 edges")
    assert "Against FuseOps (step 5): new 0; rewritten 1; removed (0)" in graph
    prov = panes.pane("provenance", trace.find("FuseTIR").index)
    rows = re.findall(r'<tr class="kernel" data-op="(\w+)" data-kernels="([^"]*)"', prov)
    assert rows == [(op, f"[&quot;{KERNEL}&quot;]") for op in ("mm", "biased", "out")]
    assert _text(panes.explain(fuse)).startswith(
        "Explain: FuseOps (step 5) legalize passlab FuseOps grouped 3 kernel calls into 1 fused "
        f"function ({KERNEL}); 0 calls stay unfused.")
    with pytest.raises(ValueError, match=r"unknown pane 'dif'; panes are "):
        panes.pane("dif", fuse)
