"""The CLI checks that -o can be written before it builds anything (exit status 2)."""

from __future__ import annotations

import pytest

from passlab import cli


@pytest.fixture()
def no_build(monkeypatch):
    """Fail the test if a build starts: the output check must come first."""
    import importlib

    build_module = importlib.import_module("passlab.recording.build")

    def refuse(*args, **kwargs):
        raise AssertionError("a build started before the output was checked")

    monkeypatch.setattr(build_module, "build", refuse)


def test_report_output_under_a_file_is_refused_before_building(tmp_path, capsys, no_build):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    assert cli.main(["report", "mlp", "-o", str(blocker / "sub" / "r.html")]) == 2
    assert capsys.readouterr().err == (
        f"passlab: error: -o {blocker / 'sub' / 'r.html'}: {blocker} is a file, so nothing "
        "can be written under it\n")


def test_report_output_that_is_a_folder_is_refused(tmp_path, capsys, no_build):
    assert cli.main(["report", "mlp", "-o", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"passlab: error: -o {tmp_path}: that is a folder; give the file to write, e.g. "
        f"{tmp_path / 'report.html'}\n")


def test_demo_output_checks(tmp_path, capsys, no_build):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    assert cli.main(["demo", "--model", "mlp", "-o", str(blocker)]) == 2
    assert capsys.readouterr().err == (
        f"passlab: error: -o {blocker}: that is a file, not a folder; give a folder to write "
        "into\n")
    (tmp_path / "out" / "trace.csv").mkdir(parents=True)
    assert cli.main(["demo", "--model", "mlp", "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        f"passlab: error: -o {tmp_path / 'out'}: {tmp_path / 'out' / 'trace.csv'} is a folder; "
        "passlab writes a file there\n")


def test_unwritable_folder(tmp_path, capsys, no_build, monkeypatch):
    import tempfile

    def denied(*args, **kwargs):  # the tests run as root, which chmod cannot stop
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "TemporaryFile", denied)
    assert cli.main(["report", "mlp", "-o", str(tmp_path / "r.html")]) == 2
    assert capsys.readouterr().err == (
        f"passlab: error: -o {tmp_path / 'r.html'}: cannot write there (Permission denied); "
        "choose another output path\n")
