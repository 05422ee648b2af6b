from __future__ import annotations

import subprocess
import sys

from passlab import cli


def test_help_runs_as_a_command():
    out = subprocess.run([sys.executable, "-m", "passlab.cli", "--help"], capture_output=True,
                         text=True, check=True)
    assert "usage: passlab" in out.stdout
    for cmd in ("passes", "demo", "report"):
        assert cmd in out.stdout


def test_passes_prints_the_pipeline_and_which_variant_relax_build_uses(capsys):
    assert cli.main(["passes", "--variant", "build"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == ("Pipeline for llvm (variant 'build'), 67 passes "
                                   "(15 Relax, 52 TIR)")
    assert "RewriteCUDAGraph" in out and "FuseOps" not in out
    assert " tirx.FlattenBuffer" in out and " host_finalize " in out
    assert ("TIR stages (s_tir, tirx, host_finalize, device_finalize, codegen) run in "
            "tvm.tirx.build and are edited like the Relax ones; code generation for llvm: "
            "available.") in out
    assert out.rstrip().endswith("relax.build/tvm.compile with no pipeline runs the 'build' "
                                 "variant for llvm.")


def test_passes_bad_target_is_one_clear_line(capsys):
    assert cli.main(["passes", "--target", "llvx"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("passlab: error: unknown target 'llvx'; did you mean 'llvm'?")
    assert len(err.strip().splitlines()) == 1


def test_demo_writes_report_and_trace(tmp_path, capsys):
    assert cli.main(["demo", "--model", "mlp", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert ("user pass 'after_fusion_report' ran after FuseTIR, before memory planning, and "
            "saw 4 TIR kernels (2 fused) and 4 temporary tensors between them: peak 2.5 KiB "
            "live at once,") in out
    assert "memory planning: 4 allocations, 3.6 KiB -> 3 allocations, 2.6 KiB" in out
    assert "outputs vs the unmodified pipeline: max abs diff 0" in out
    # the answer comes first: one line for the pipeline, not a row per pass
    assert out.splitlines()[0] == (
        "pipeline: TVM's default for llvm, 71 passes, with the user pass "
        "'after_fusion_report' inserted at #7, after the legalize stage (`passlab passes` "
        "lists them all)")
    assert out.index("user pass 'after_fusion_report' ran") < 400
    assert {p.name for p in tmp_path.iterdir()} == {"report.html", "trace.txt", "trace.csv"}
    assert "after_fusion_report" in (tmp_path / "trace.txt").read_text()


def test_report_of_a_model_file_is_titled_by_its_name_not_its_path(tmp_path):
    import pytest

    onnx = pytest.importorskip("onnx")
    from test_importers import onnx_mlp

    folder = tmp_path / "private" / "home"
    folder.mkdir(parents=True)
    onnx.save(onnx_mlp(batch=2), str(folder / "m.onnx"))
    out = tmp_path / "r.html"
    assert cli.main(["report", str(folder / "m.onnx"), "-o", str(out)]) == 0
    html = out.read_text()
    assert "<title>m.onnx (fused, llvm)" in html
    assert str(folder) not in html
