"""TVM's C++ log while passlab builds: the benign lines TVM prints on every ordinary build
become the trace's warnings, everything else reaches standard error unchanged."""

from __future__ import annotations

import os

import pytest

import passlab
from passlab._tvm.logs import sorted_stderr

CUDA_LINE = (b'[01:44:27] /project/src/backend/cuda/codegen/target_kind.cc:80: Warning: Unable '
             b'to detect CUDA version, default to "-arch=sm_50" instead\n')
CUDA_SENTENCE = ("TVM found no CUDA toolkit and assumed the GPU architecture sm_50 "
                 "(-arch=sm_50): the code is generated, not compiled for a real device")


def test_benign_lines_are_kept_and_the_rest_passes_through(capfd):
    with sorted_stderr() as kept:
        os.write(2, CUDA_LINE + b"a real problem\n" + CUDA_LINE)
        os.write(2, b"[01:44:27] x.cc:1: Warning: Fast mode segfaults when there are "
                    b"out-of-bounds indices. Make sure input indices are in bound\nno newline")
    assert kept == [f"{CUDA_SENTENCE} (x2)",
                    "TVM lowered a gather/take in its fast mode, which does not check indices: "
                    "an index out of bounds at run time is undefined behaviour"]
    assert capfd.readouterr().err == "a real problem\nno newline"


def test_an_inner_block_reports_to_the_outer_one(capfd):
    with sorted_stderr() as outer:
        with sorted_stderr() as inner:
            os.write(2, CUDA_LINE)
        os.write(2, CUDA_LINE)
    assert (inner, outer) == ([], [f"{CUDA_SENTENCE} (x2)"])
    assert capfd.readouterr().err == ""


def test_making_a_gpu_target_prints_nothing(capfd):
    passlab.Pipeline.default("cuda")
    assert "CUDA" not in capfd.readouterr().err


@pytest.mark.slow
def test_a_gpu_build_says_it_once_in_its_trace_not_on_stderr(capfd):
    trace = passlab.build(passlab.models.mlp(), target="cuda").trace
    assert trace.warnings == (CUDA_SENTENCE,)
    assert trace.summary().splitlines()[1] == f"warning: {CUDA_SENTENCE}"
    assert "CUDA" not in capfd.readouterr().err


def test_nested_blocks_are_told_apart_by_identity_not_content(capfd):
    # three open blocks that kept nothing yet are equal dicts: each must close its own
    with sorted_stderr() as outer, sorted_stderr():
        with sorted_stderr():
            pass
        os.write(2, CUDA_LINE)
    assert outer == [CUDA_SENTENCE]
