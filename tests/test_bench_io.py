"""benchmarks/bench_io.py measures something: one small model, every figure printed."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def test_bench_io_prints_a_row_of_figures_per_model(capsys):
    import bench_io

    assert bench_io.main(["--models", "mlp", "--repeat", "1"]) == 0
    row = capsys.readouterr().out.splitlines()[-1].split()
    assert row[0] == "mlp" and row[1] == "96"
    seconds = [float(x[:-1]) for x in row if re.fullmatch(r"\d+\.\d+s", x)]
    ratios = [float(x[:-1]) for x in row if re.fullmatch(r"\d+\.\d+x", x)]
    assert len(seconds) == 5 and all(s > 0 for s in seconds)
    assert len(ratios) == 3 and all(r > 0 for r in ratios)


def test_bench_io_names_the_models_it_knows():
    import bench_io

    with pytest.raises(SystemExit):
        bench_io.main(["--models", "resnet,nope"])
