"""Model files from strangers: ``passlab.load("model.pt2")`` never runs code from the file
unless the caller says ``trust=True`` (issue 22, item 6).

``torch.export.load`` unpickles a weight whose payload config says ``"use_pickle": true``
with ``weights_only=False``, falls back to ``weights_only=False`` for example inputs the
restricted unpickler refuses, and evaluates shape expressions with ``sympy.sympify``. Each
test plants a payload that would create a marker file, and checks that the file does not
appear.
"""

from __future__ import annotations

import json
import pickle
import zipfile
from pathlib import Path

import pytest

import passlab
from passlab.errors import ModelFormatError, UntrustedModelError
from passlab.models._pt2 import unsafe_expression

torch = pytest.importorskip("torch", reason="torch is not installed (pip install "
                                            "'passlab[torch]')")


class _Touch:
    """A pickle that creates ``path`` when it is unpickled (any code could run there)."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    """A small .pt2 with a dynamic batch dimension (so that its JSON holds shape
    expressions), exactly as torch.export.save writes it."""

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x):
            return torch.relu(self.fc(x))

    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=2, max=64)
    program = torch.export.export(Net().eval(), (torch.randn(2, 4),),
                                  dynamic_shapes=({0: batch},))
    path = tmp_path_factory.mktemp("pt2") / "net.pt2"
    torch.export.save(program, str(path))
    return path


def rewrite(src: Path, dst: Path, edit) -> Path:
    """``src`` with its members changed by ``edit({short name: bytes})`` (names without
    the archive's top folder), written the way torch's reader reads it."""
    with zipfile.ZipFile(src) as z:
        infos = z.infolist()
        top = infos[0].filename.split("/")[0]
        members = {i.filename[len(top) + 1:]: z.read(i) for i in infos}
    edit(members)
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as z:
        for name, data in members.items():
            z.writestr(f"{top}/{name}", data)
    return dst


def pickled_weight(members: dict, marker: Path) -> None:
    cfg_name = "data/weights/model_weights_config.json"
    cfg = json.loads(members[cfg_name])
    meta = cfg["config"]["fc.weight"]
    meta["use_pickle"] = True
    members[f"data/weights/{meta['path_name']}"] = pickle.dumps(_Touch(marker))
    members[cfg_name] = json.dumps(cfg).encode()


@pytest.mark.slow  # exports a torch model once (~10 s with torch's import)
def test_an_archive_torch_wrote_loads_without_trust(archive):
    mod = passlab.load(archive)  # shape expressions and raw weights: data
    assert [gv.name_hint for gv in mod.get_global_vars()] == ["main"]
    assert "R.Tensor((s" in mod.script() or "R.Tensor((batch" in mod.script()


@pytest.mark.slow  # exports a torch model once (~10 s with torch's import)
def test_pickled_weight_is_refused_and_never_unpickled(archive, tmp_path):
    marker = tmp_path / "MARKER"
    bad = rewrite(archive, tmp_path / "bad.pt2", lambda m: pickled_weight(m, marker))
    with pytest.raises(UntrustedModelError, match=(
            r"bad\.pt2' was not loaded: 'data/weights/model_weights_config\.json' says "
            r"'fc\.weight' is pickled \(\"use_pickle\": true; torch unpickles it with "
            r"weights_only=False, and a pickle can run any Python\), so reading it could run "
            r"code from the file; load it only if you trust whoever made it, with "
            r"passlab\.load\(path, trust=True\) \(--trust on the command line")):
        passlab.load(bad)
    assert not marker.exists()
    with pytest.raises(UntrustedModelError):
        passlab.models.as_module(str(bad))
    with pytest.raises(UntrustedModelError):
        passlab.build(str(bad))
    assert not marker.exists()
    # the opt-in reaches torch.export.load, which runs the pickle (here: opens the marker)
    with pytest.raises(ModelFormatError):
        passlab.load(bad, trust=True)
    assert marker.exists()


@pytest.mark.slow  # exports a torch model once (~10 s with torch's import)
def test_cli_and_sweep_refuse_without_trust(archive, tmp_path, capsys):
    from passlab.cli import main

    marker = tmp_path / "MARKER"
    bad = rewrite(archive, tmp_path / "bad.pt2", lambda m: pickled_weight(m, marker))
    assert main(["report", str(bad), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "was not loaded" in err and "(--trust on the command line" in err
    assert not marker.exists() and not (tmp_path / "r.html").exists()
    # a sweep refuses it in its own process, before any worker starts
    assert main(["sweep", str(bad), "-o", str(tmp_path / "s")]) == 2
    assert "bad.pt2' was not loaded: " in capsys.readouterr().err
    with pytest.raises(UntrustedModelError, match="sweep\\(..., trust=True\\)"):
        passlab.sweep([bad], {"default": "fused"})
    assert not marker.exists()


@pytest.mark.slow  # exports a torch model once (~10 s with torch's import)
def test_pickled_example_inputs_are_never_unpickled(archive, tmp_path):
    """torch retries the example inputs with weights_only=False when the restricted
    unpickler refuses them: no config says so, so only the forced restriction stops it."""
    marker = tmp_path / "MARKER"

    def edit(members):
        members["data/sample_inputs/model.pt"] = pickle.dumps(_Touch(marker))

    bad = rewrite(archive, tmp_path / "inputs.pt2", edit)
    with pytest.raises(UntrustedModelError, match=r"inputs\.pt2' was not loaded: it holds a "
                                                  r"pickle that is not plain tensor data"):
        passlab.load(bad)
    assert not marker.exists()


@pytest.mark.slow  # exports a torch model once (~10 s with torch's import)
def test_objects_and_compiled_code_are_refused(archive, tmp_path):
    def opaque(members):
        cfg_name = "data/constants/model_constants_config.json"
        members[cfg_name] = json.dumps({"config": {"obj": {
            "path_name": "opaque_obj_0", "is_param": False, "use_pickle": False,
            "tensor_meta": None}}}).encode()
        members["data/constants/opaque_obj_0"] = pickle.dumps(_Touch(tmp_path / "M"))

    with pytest.raises(UntrustedModelError, match=r"stores 'obj' as 'opaque_obj_0', an object "
                                                  r"rather than a tensor"):
        passlab.load(rewrite(archive, tmp_path / "o.pt2", opaque))

    def aoti(members):
        members["data/aotinductor/model/model.so"] = b"\x7fELF"

    with pytest.raises(UntrustedModelError, match=r"it holds compiled code "
                                                  r"\('data/aotinductor/model/model\.so'\)"):
        passlab.load(rewrite(archive, tmp_path / "a.pt2", aoti))

    def legacy(members):
        members["archive_version"] = b"-1"

    with pytest.raises(UntrustedModelError, match=r"not a current-format archive "
                                                  r"\(archive_version '-1', expected '0'\)"):
        passlab.load(rewrite(archive, tmp_path / "l.pt2", legacy))
    assert not (tmp_path / "M").exists()


@pytest.mark.slow  # exports a torch model once (~10 s with torch's import)
def test_shape_expressions_that_would_run_code_are_refused(archive, tmp_path):
    marker = tmp_path / "MARKER"
    payload = f"open({''.join(f'chr({ord(c)})+' for c in str(marker))[:-1]}, chr(119))"

    def edit(members):
        text = members["models/model.json"].decode()
        assert '"expr_str": "Symbol(' in text  # what torch writes for a dynamic dimension
        members["models/model.json"] = text.replace(
            "Symbol('s", payload + "+Symbol('s", 1).encode()

    bad = rewrite(archive, tmp_path / "expr.pt2", edit)
    with pytest.raises(UntrustedModelError, match=r"a symbolic shape in 'models/model\.json' is "
                                                  r"not plain arithmetic \(the name 'open'\); "
                                                  r"torch evaluates these strings with "
                                                  r"sympy\.sympify"):
        passlab.load(bad)
    assert not marker.exists()


@pytest.mark.parametrize("text, why", [
    ("Symbol('s77', positive=True, integer=True)", None),
    ("Max(1, FloorDiv(s0, 2)) + 3.5e2", None),
    ("eval(s0)", "the name 'eval'"),
    ("s0.__class__", "the character '.' at position 2"),
    ("Symbol('a b')", "the character \"'\" at position 7"),
    ("__import__", "the name '__import__'"),
    ("s0; 1", "the character ';' at position 2"),
    (5, "a int, not a string"),
])
def test_expression_check(text, why):
    assert unsafe_expression(text) == why
