"""One number per pass (issue 23 item 7): every pane names a pass by its pipeline
position, the Edit pane's and Pipeline.position()'s number, with the step index in a
tooltip; an edit keeps the numbers; a disabled pass stays in the list, greyed; an
occurrence suffix only where two rows of the main chain share a name."""

from __future__ import annotations

import pytest

pytest.importorskip("anywidget", reason="the Explorer needs the 'notebook' extra")

from passlab.recording import numbering  # noqa: E402
from passlab.views import explorer_list  # noqa: E402
from passlab.views.explorer import Explorer  # noqa: E402


def test_steps_are_numbered_by_their_pipeline_position(mlp_build):
    trace, pipe = mlp_build.trace, mlp_build.pipeline
    fuse = trace.find("FuseOps")
    assert (fuse.index, pipe.names.index("FuseOps"), pipe.position(5)) == (10, 5, (1, 3))
    rows = {r["i"]: r for r in explorer_list.rows(trace)}
    assert (rows[10]["n"], rows[10]["label"]) == (5, "FuseOps")
    assert numbering.ref(fuse) == "#5 FuseOps"
    assert numbering.ref_title(fuse) == "step 10 of the trace"
    # TVM runs tirx.BindTarget itself: no pipeline entry, so no number
    bind = trace.find("tirx.BindTarget")
    assert rows[bind.index]["n"] is None
    assert numbering.ref(bind) == f"tirx.BindTarget (step {bind.index})"
    # the 67 entries that ran have their positions, in order, TIR stages too; the
    # device_finalize stage (67..69) has no device function to run on on llvm
    ran = [rows[i]["n"] for i in explorer_list.visible(trace) if rows[i]["n"] is not None]
    assert ran == list(range(67)) and len(pipe) == 70
    assert [e.name for e in pipe][67:] == ["tirx.LowerWarpMemory", "tirx.StmtSimplify", "tirx.LowerIntrin"]
    assert rows[trace.find("tirx.LowerIntrin").index]["n"] == 66  # the host one


def test_the_graph_pane_names_passes_as_the_list_does(mlp_build):
    trace = mlp_build.trace
    ex = Explorer(trace, tab="graph", selected=trace.find("FuseOps").index)
    assert ('<div class="plx-graph-marks" title="step 9 of the trace">Against #4 FoldConstant: '
            in ex.graph_html)


def test_an_edit_keeps_the_numbers_and_the_disabled_pass_stays_greyed(mlp_build):
    ex = Explorer(mlp_build, tab="edit")
    ex.set_state({"edit_pending": [
        {"action": "disable", "position": 4},
        {"action": "insert", "position": 5, "name": "DeadCodeElimination", "where": "after"}]})
    ex.set_state({"edit_run": ex.edit_run + 1})
    rows = {r["i"]: r for r in ex.steps}
    shown = [(rows[i]["n"], rows[i]["label"], rows[i]["kind"]) for i in ex.visible[:4]]
    # the re-run's trace starts at FuseOps, yet FuseOps is still #5; the inserted pass is
    # #6 DeadCodeElimination (no "#2": no other row of the main chain bears that name);
    # FoldConstant, disabled, keeps its row (index -1 - 4) and number
    assert shown == [(4, "FoldConstant", "disabled"), (5, "FuseOps", "pass"),
                     (6, "DeadCodeElimination", "pass"), (7, "FuseTIR", "pass")]
    assert ex.visible[0] == -5 and rows[-5]["summary"] == "disabled"
    assert ex.selected >= 0  # a disabled row is never selected
    # the Edit pane numbers the same passes the same way
    assert '<span class="plx-i">#5</span><span class="plx-edit-name">FuseOps</span>' in ex.edit_html
    assert ('<span class="plx-i">#6</span><span class="plx-edit-name">DeadCodeElimination'
            '</span>') in ex.edit_html
