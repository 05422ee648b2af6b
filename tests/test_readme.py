"""The README's quick start runs as written (with the small MLP instead of the ResNet)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _block(title: str) -> str:
    text = README.read_text()
    start = text.index(title)
    return re.search(r"```python\n(.*?)```", text[start:], re.S).group(1)


def test_quick_start_runs(capsys):
    code = _block("## Quick start").replace("passlab.models.resnet()", "passlab.models.mlp()")
    scope: dict = {}
    exec(compile(code, "README quick start", "exec"), scope)
    assert scope["out"].shape == (4, 8)
    assert "2 fused kernels" in capsys.readouterr().out
    assert scope["trace"].find("FuseOps").functions_changed.added


def test_names_used_in_the_readme_exist():
    import passlab

    for name in ("diff", "fused_graph", "buffers", "Explorer", "load", "Backend", "partitions",
                 "bisect", "compare", "blame", "rerun", "predicates", "checks", "reproducer",
                 "load_trace", "record", "sweep"):
        assert getattr(passlab, name) is not None, name
    import passlab.backend

    assert callable(passlab.backend.preview)
