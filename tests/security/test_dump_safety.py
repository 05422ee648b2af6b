"""trace.dump(folder): never deletes files it did not write, never stops half-way with the
old dump gone, and never writes a pass name as a line of code."""

from __future__ import annotations

import ast
import json

import pytest
import tvm

import passlab
from passlab import Pipeline
from passlab.io import export_dump
from passlab.io.dump import MANIFEST, _safe


def keep(mod):
    return mod


def touch_kernels(mod):  # changes the module, so the dump has a file for this pass
    return tvm.IRModule(dict(mod.functions_items()), attrs={"touched": 1})


def touch_again(mod):
    return tvm.IRModule(dict(mod.functions_items()), attrs={"touched": 2})


def test_user_files_that_look_numbered_are_kept(mlp_build, tmp_path):
    mine = {"001_setup.py": "print('mine')\n", "failure.txt": "my notes\n",
            "passes.txt": "my passes\n"}
    for name, text in mine.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(FileExistsError, match=r"is not empty and holds no passlab dump \(no "
                                              r"\.passlab-dump\.json\); dump into a new or "
                                              r"empty folder, or pass overwrite=True"):
        mlp_build.trace.dump(tmp_path)
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == mine  # untouched

    sub = tmp_path / "dump"
    (sub).mkdir()
    (sub / "001_setup.py").write_text("print('mine')\n")
    files = mlp_build.trace.dump(sub, overwrite=True)
    assert files[1].name == "001_LegalizeOps.py"
    assert (sub / "001_setup.py").read_text() == "print('mine')\n"
    listed = json.loads((sub / MANIFEST).read_text())["files"]
    assert listed == [f.name for f in files] + ["passes.txt"]
    # a dump of every step, then of the changed ones: exactly the first one's files go
    more = mlp_build.trace.dump(sub, all_steps=True)
    assert len(more) > len(files)
    again = mlp_build.trace.dump(sub)
    assert again == files
    assert sorted(p.name for p in sub.iterdir()) == sorted(
        [f.name for f in files] + ["001_setup.py", "passes.txt", MANIFEST])


def test_manifest_cannot_point_outside_the_folder(mlp_build, tmp_path):
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    dump = tmp_path / "d"
    dump.mkdir()
    (dump / MANIFEST).write_text(json.dumps({"files": ["../precious.txt", str(outside), ".."]}))
    export_dump(mlp_build.trace, dump)
    assert outside.read_text() == "keep me"


@pytest.mark.slow
def test_long_and_hostile_pass_names(tmp_path):
    marker = tmp_path / "MARKER"
    long_name = "p" * 300
    hostile = f"h\nimport pathlib; pathlib.Path({str(marker)!r}).touch()\n#"
    pipe = (Pipeline.default("llvm").insert(touch_kernels, after="FuseOps", name=long_name)
            .insert(touch_again, after="FuseTIR", name=hostile))
    trace = passlab.build(passlab.models.mlp(), pipe).trace
    dump = tmp_path / "dump"
    old = export_dump(passlab.build(passlab.models.mlp()).trace, dump)
    files = export_dump(trace, dump)  # ENAMETOOLONG before: half-way, old dump deleted
    names = [f.name for f in files]
    long_file = next(n for n in names if "_ppp" in n)
    assert long_file == f"{names.index(long_file):03d}_{_safe(long_name)}.py"
    assert len(_safe(long_name)) == 60 and _safe(long_name).startswith("p" * 51 + "_")
    assert _safe(long_name) != _safe("p" * 299)  # the hash keeps names apart
    hostile_file = next(f for f in files if "_h_import_pathlib" in f.name)
    text = hostile_file.read_text()
    head = text.split("\n\n", 1)[0].splitlines()
    assert all(line.startswith("# ") for line in head)
    assert head[0].startswith("# passlab dump: after step #") and "h\\nimport pathlib" in head[0]
    ast.parse(text)  # still TVMScript
    for f in files:  # no line of any file runs the payload
        assert not any(line.startswith("import pathlib") for line in f.read_text().splitlines())
    assert not marker.exists()
    assert {p.name for p in dump.iterdir()} == set(names) | {"passes.txt", MANIFEST}
    assert [o.name for o in old[:3]] == names[:3]


def test_a_failing_dump_leaves_the_old_one(mlp_build, tmp_path, monkeypatch):
    dump = tmp_path / "dump"
    old = export_dump(mlp_build.trace, dump)
    before = {p.name: p.read_text() for p in dump.iterdir()}
    from passlab.io import dump as dump_module

    def broken(*args, **kwargs):
        raise OSError(36, "File name too long")

    monkeypatch.setattr(dump_module, "_write_module", broken)
    with pytest.raises(OSError, match="File name too long"):
        export_dump(mlp_build.trace, dump, all_steps=True)
    assert {p.name: p.read_text() for p in dump.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["dump"]  # no temporary folder left
    assert old[0].exists()


@pytest.mark.slow
def test_module_with_a_hostile_function_name_is_written_as_comments(tmp_path):
    marker = tmp_path / "MARKER"
    mod = passlab.models.mlp()
    funcs = dict(mod.functions_items())
    entry = next(gv for gv in funcs if gv.name_hint == "forward")
    name = f"x\nimport pathlib; pathlib.Path({str(marker)!r}).touch()\ny"
    funcs[tvm.ir.GlobalVar(name)] = tvm.relax.utils.copy_with_new_vars(
        funcs[entry]).without_attr("global_symbol")
    try:
        trace = passlab.build(tvm.IRModule(funcs, attrs=mod.attrs)).trace
    except passlab.BuildError as err:
        trace = err.trace
    files = export_dump(trace, tmp_path / "d")
    text = files[0].read_text()
    body = text.split("\n\n", 1)[1]
    assert body.startswith("# this module holds names that are not plain identifiers (e.g. "
                           '"x\\nimport pathlib')
    assert all(line.startswith("#") for line in body.splitlines())
    assert not marker.exists()


def test_a_manifest_that_is_a_link_is_refused_and_its_target_kept(mlp_build, tmp_path):
    """A dump folder unpacked from someone's archive, or planted in a shared temp folder,
    may hold a link named like the manifest: the dump used to overwrite its target."""
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    dump = tmp_path / "d"
    dump.mkdir()
    (dump / MANIFEST).symlink_to(precious)
    with pytest.raises(FileExistsError, match=rf"{MANIFEST} is a symbolic link \(to "
                                              rf"'{precious}'\), not a manifest passlab wrote; "
                                              r"a dump never reads or writes through links"):
        export_dump(mlp_build.trace, dump, overwrite=True)
    assert precious.read_text() == "keep me"
    assert [p.name for p in dump.iterdir()] == [MANIFEST] and (dump / MANIFEST).is_symlink()


def test_links_named_like_dump_files_are_replaced_not_followed(mlp_build, tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    dump = tmp_path / "d"
    export_dump(mlp_build.trace, dump)
    for name in ("passes.txt", "000_input.py"):  # files the manifest lists
        (dump / name).unlink()
        (dump / name).symlink_to(precious)
    files = export_dump(mlp_build.trace, dump)
    assert precious.read_text() == "keep me"
    assert not any(p.is_symlink() for p in dump.iterdir())
    assert (dump / "passes.txt").read_text() == mlp_build.trace.to_text() + "\n"
    assert files[0].read_text().startswith("# passlab dump: the input module\n")
