"""The one sequence base (passlab._sequence.NamedSequence) and the results built on it:
position, negative position, slices, names, and the Sequence mixin methods."""

from __future__ import annotations

import pytest

from passlab._sequence import NamedSequence
from passlab.analysis._partitions_report import PartitionReport, Region
from passlab.analysis.graph import FusedGraph, Node
from passlab.analysis.partitions import BackendComparison
from passlab.analysis.table import PassTable
from passlab.errors import UnknownNameError
from passlab.pipeline import Pipeline


class Letters(NamedSequence[str]):
    def __init__(self, items):
        self.items = tuple(items)

    def _items(self):
        return self.items


class Named(Letters):
    def _by_name(self, name):
        if name.upper() in self.items:
            return name.upper()
        raise KeyError(name)


def test_position_slices_and_mixin_methods():
    s = Letters("abca")
    assert (len(s), s[0], s[-1], s[1:3], s[::-1]) == (4, "a", "a", ("b", "c"), ("a", "c", "b", "a"))
    assert list(s) == ["a", "b", "c", "a"] and list(reversed(s)) == ["a", "c", "b", "a"]
    assert ("c" in s, "z" in s, s.index("c"), s.count("a")) == (True, False, 2, 2)
    assert bool(Letters("")) is False
    with pytest.raises(IndexError):
        s[4]


def test_a_name_is_a_type_error_unless_the_result_has_names():
    with pytest.raises(TypeError, match="Letters indices must be integers or slices, not str"):
        Letters("ab")["a"]
    assert Named("AB")["b"] == "B"
    with pytest.raises(KeyError):
        Named("AB")["c"]


def test_fused_graph_by_position_id_and_slice():
    nodes = (Node("x", "x", "input"), Node("lv", "relu", "op"), Node("out", "out", "output"))
    g = FusedGraph("forward", nodes, ())
    assert g[1] is nodes[1] and g["out"] is nodes[2] and g[-1] is nodes[2]
    assert g[:2] == nodes[:2]
    with pytest.raises(UnknownNameError, match="unknown node 'ou'; did you mean 'out'"):
        g["ou"]


def test_partition_report_by_region_name_or_call_variable():
    regions = (Region("fused_a_npu", "npu", "lv1", (), (), (), ()),
               Region("fused_b_npu", "npu", "lv2", (), (), (), ()))
    r = PartitionReport("forward", (), regions)
    assert (r[0], r["fused_b_npu"], r["lv1"], r[1:]) == (regions[0], regions[1], regions[0],
                                                          regions[1:])
    cmp = BackendComparison((("npu", r), ("other", PartitionReport("forward", (), ()))))
    assert cmp[0] == ("npu", r)  # by position: the (name, report) pair
    assert cmp["npu"] is r  # by backend name: the report
    assert [name for name, _ in cmp] == ["npu", "other"]
    with pytest.raises(UnknownNameError, match="unknown backend 'npv'; did you mean 'npu'"):
        cmp["npv"]


def test_pass_table_rows_by_position_only():
    t = PassTable(({"index": 0}, {"index": 1}))
    assert (t[-1], t[:1], len(t)) == ({"index": 1}, ({"index": 0},), 2)
    with pytest.raises(TypeError, match="PassTable indices must be integers or slices"):
        t["LegalizeOps"]


def test_pipeline_is_the_sequence_of_its_passes():
    pipe = Pipeline.default("llvm")
    passes = [e for stage in pipe.all_stages for e in stage.passes]  # Relax, then TIR
    assert list(pipe) == passes and len(pipe) == len(passes)
    assert pipe[0] is passes[0] and pipe[-1] is passes[-1]
    assert pipe["FuseOps"] is next(e for e in passes if e.name == "FuseOps")
    with pytest.raises(UnknownNameError, match="unknown pass or stage 'FuseOp'; did you mean "
                                               "'FuseOps'"):
        pipe["FuseOp"]
