"""CSV exports: text cells a spreadsheet would run as formulas are written as text."""

from __future__ import annotations

import csv

import pandas as pd

from passlab._render import csv_cell, to_csv


def test_formula_cells_are_prefixed(tmp_path):
    frame = pd.DataFrame({"name": ["=HYPERLINK(\"http://x\")", "+1", "-2", "@SUM(A1)",
                                   "\tx", "\rx", "FuseOps", "a=b"],
                          "ms": [1.5, -2.0, 3, 4, 5, 6, 7, 8]},
                         index=pd.Index(["=a", "b", "c", "d", "e", "f", "g", "h"], name="pass"))
    frame["=col"] = 1
    path = to_csv(frame, tmp_path / "t.csv")
    rows = list(csv.reader(path.open(newline="")))
    assert rows[0] == ["pass", "name", "ms", "'=col"]
    assert [r[:3] for r in rows[1:]] == [
        ["'=a", "'=HYPERLINK(\"http://x\")", "1.5"], ["b", "'+1", "-2.0"], ["c", "'-2", "3.0"],
        ["d", "'@SUM(A1)", "4.0"], ["e", "'\tx", "5.0"], ["f", "'\rx", "6.0"],
        ["g", "FuseOps", "7.0"], ["h", "a=b", "8.0"]]
    assert (csv_cell(-3), csv_cell(None), csv_cell("")) == (-3, None, "")


def test_trace_table_with_a_hostile_pass_name(mlp_build, tmp_path):
    import passlab

    def keep(mod):
        return mod

    pipe = passlab.Pipeline.default("llvm").insert(keep, after="FuseOps", name="=cmd|'/c calc'!A1")
    trace = passlab.build(passlab.models.mlp(), pipe).trace
    rows = list(csv.DictReader(to_csv(trace.to_dataframe(), tmp_path / "t.csv").open()))
    assert [r["name"] for r in rows if r["origin"] == "user"] == ["'=cmd|'/c calc'!A1"]
