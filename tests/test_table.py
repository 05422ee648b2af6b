from __future__ import annotations

import importlib

import pytest

import passlab


@pytest.fixture(scope="module")
def table(mlp_build):
    return passlab.pass_table(mlp_build.trace)


def test_rows_have_exact_counts_and_peaks(table):
    rows = {r["name"]: r for r in table}
    legal, fuse_tir, plan = rows["LegalizeOps"], rows["FuseTIR"], rows["StaticPlanBlockMemory"]
    assert (legal["added"], legal["modified"], legal["prim_funcs_after"]) == (7, 1, 7)
    assert (fuse_tir["removed"], fuse_tir["prim_funcs_after"]) == (5, 4)
    assert (fuse_tir["bindings_before"], fuse_tir["bindings_after"]) == (10, 4)
    assert fuse_tir["peak_bytes"] == 2560 and fuse_tir["peak_exact"] is True
    assert plan["peak_bytes"] == 2688  # storages live from allocation to last use
    assert rows["tirx.MakePackedAPI"]["peak_bytes"] is None  # no Relax function left
    assert all(r["ir_lines"] is not None for r in table) and fuse_tir["ir_lines"] > 50


def test_text_hides_passes_that_changed_nothing(table):
    text = table.to_text()
    assert "FoldConstant" not in text and "FuseOps" in text
    assert "passes that changed nothing hidden: to_text(changed_only=False)" in text
    assert "FoldConstant" in table.to_text(changed_only=False)
    df = table.to_dataframe()
    assert {"ir_lines", "peak_bytes", "bindings_after"} <= set(df.columns)
    assert len(df) == len(table)
    assert '<tr class="same">' in table.to_html(changed_only=False)


def test_bad_input():
    with pytest.raises(TypeError, match="pass_table\\(\\) takes a passlab.Trace"):
        passlab.pass_table("mlp")


# ------------------------------------------------------------- a hand-made trace (no build)
def _tiny_trace():
    from test_checks import Add, AddMul, make_trace

    return make_trace(("LegalizeOps", Add, Add), ("Rewrite", Add, AddMul), ("mine", AddMul, None),
                      user=("mine",))


def test_rows_of_a_hand_made_trace_measure_each_module_once(monkeypatch):
    table_mod = importlib.import_module("passlab.analysis.table")
    printed = []
    lines = table_mod._lines
    monkeypatch.setattr(table_mod, "_lines", lambda mod: printed.append(mod) or lines(mod))
    table = passlab.pass_table(_tiny_trace())
    assert [(r["index"], r["label"], r["changed"], r["failed"], r["ir_lines"], r["peak_bytes"],
             r["peak_exact"]) for r in table] == [
        (2, "LegalizeOps", False, False, 4, 16, True),
        (3, "Rewrite", True, False, 5, 32, True),
        (4, "mine", False, True, 5, 32, True)]  # a failed pass: the module it received
    assert len(printed) == 2  # AddMul is the module of steps 3 and 4: printed once
    text = table.to_text()
    assert "LegalizeOps" not in text and "\n3  Rewrite  legalize  50.00   +0 -0 ~1" in text
    assert "(1 library passes that changed nothing hidden: to_text(changed_only=False))" in text
