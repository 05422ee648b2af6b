"""No code from data: names inside IR, pass names, error messages and trace files never
become code, neither when passlab writes a reproducer nor when the reproducer runs.

Each hostile input carries a payload that would create a marker file if it ever ran.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tvm

import passlab
from passlab import Pipeline
from passlab.io import load_trace, reproducer, save_trace
from passlab.io.reproducer import literal, module_code, unsafe_string


def _payload(marker: Path) -> str:
    return f"import pathlib; pathlib.Path({str(marker)!r}).touch()"


def _run(paths: list[Path], cwd: Path) -> list[subprocess.CompletedProcess]:
    """Run scripts in fresh interpreters without passlab on the path, all at once."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    procs = [subprocess.Popen([sys.executable, str(p)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)
             for p in paths]
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        out.append(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr))
    return out


def _failed(pipe, model=None) -> passlab.BuildError:
    with pytest.raises(passlab.BuildError) as err:
        passlab.build(model or passlab.models.mlp(), pipe)
    return err.value


def _with_hostile_function(marker: Path) -> tvm.IRModule:
    """The mlp plus a private copy of ``forward`` whose name holds a newline and a line
    that TVM's printer prints raw: ``# import tvm; <payload>``."""
    mod = passlab.models.mlp()
    name = f"x\n# import tvm; {_payload(marker)}\ny"
    funcs = dict(mod.functions_items())
    entry = next(gv for gv in funcs if gv.name_hint == "forward")
    copy = tvm.relax.utils.copy_with_new_vars(funcs[entry])  # its own variables
    funcs[tvm.ir.GlobalVar(name)] = copy.without_attr("global_symbol")
    return tvm.IRModule(funcs, attrs=mod.attrs)


#: closes a ''' or """ docstring, ends in a backslash, then a line of code
QUOTES = "bad ''' \"\"\" \\\\\nimport pathlib; pathlib.Path('MARKER').touch()"


def raise_quotes(mod):
    raise ValueError(QUOTES)


def raise_windows_path(mod):
    raise FileNotFoundError(r"no file C:\Users\new\x01\model.onnx (\U0001 \N{x})")


def keep(mod):
    return mod


@pytest.mark.slow
def test_hostile_function_name_prints_raw_but_never_runs(tmp_path):
    marker = tmp_path / "MARKER"
    mod = _with_hostile_function(marker)
    # TVM's printer really prints the name raw: the old reproducer exec'd that line
    assert f"\n# import tvm; {_payload(marker)}" in mod.script()
    assert unsafe_string(mod).startswith("x\n# import tvm;")
    mode, code, why = module_code(mod)
    assert mode == "json"
    assert why.startswith('it holds a string that is not a plain name ("x\\n# import tvm;')
    assert not marker.exists()
    ast.parse(code)  # one string literal and a load_json call
    assert "pathlib" not in code

    err = _failed(Pipeline.default("llvm").insert(raise_quotes, after="FuseOps"), mod)
    r = reproducer(err)
    assert r.mode == "json" and not marker.exists()
    (out,) = _run([r.write(tmp_path / "hostile_module.py")], tmp_path)
    assert not marker.exists()
    assert out.returncode == 1
    assert f"ValueError: {QUOTES}" in out.stderr


@pytest.mark.slow
def test_quotes_and_windows_path_in_messages_stay_strings(tmp_path):
    scripts = []
    for fn, last in ((raise_quotes, f"ValueError: {QUOTES}"),
                     (raise_windows_path, r"FileNotFoundError: no file C:\Users\new\x01"
                                          r"\model.onnx (\U0001 \N{x})")):
        err = _failed(Pipeline.default("llvm").insert(fn, after="FuseOps"))
        r = reproducer(err)
        compile(r.text, "reproducer.py", "exec")  # a \U in a docstring would not compile
        tree = ast.parse(r.text)
        consts = {t.id: ast.literal_eval(n.value) for n in tree.body
                  if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)
                  and t.id in ("ERROR", "EXPECTED", "PASS")}
        assert consts["ERROR"] == r.error and consts["PASS"] == fn.__name__
        assert ast.get_docstring(tree).startswith("A passlab reproducer: runs one recorded pass")
        assert r.error.splitlines()[0] not in ast.get_docstring(tree)
        scripts.append((r.write(tmp_path / f"{fn.__name__}.py"), last))
    results = _run([p for p, _ in scripts], tmp_path)
    for (path, last), out in zip(scripts, results):
        assert out.returncode == 1, out.stderr
        assert out.stderr.strip().endswith(last), path
    assert not (tmp_path / "MARKER").exists()


@pytest.mark.slow
def test_hostile_pass_name(tmp_path):
    marker = tmp_path / "MARKER"
    name = f"p'''\"\"\"\n{_payload(marker)}\n#"

    def fails(mod):
        raise ValueError("from the hostile-named pass")

    err = _failed(Pipeline.default("llvm").insert(fails, after="FuseOps", name=name))
    assert err.step.name == name
    r = reproducer(err)
    assert not marker.exists()
    assert r.name.startswith(f"reproduce_{err.step.index:03d}_p_______import_pathlib")
    for line in r.text.splitlines():  # the payload is never a line of code or a comment
        assert not line.lstrip().startswith(("import pathlib", "# import")), line
    (out,) = _run([r.write(tmp_path / "hostile_pass.py")], tmp_path)
    assert not marker.exists()
    assert out.stderr.strip().splitlines()[-1] == "ValueError: from the hostile-named pass"


def _tamper(path: Path, edit) -> Path:
    with zipfile.ZipFile(path) as z:
        files = {n: z.read(n) for n in z.namelist()}
    data = json.loads(files["trace.json"])
    edit(data)
    files["trace.json"] = json.dumps(data).encode()
    out = path.with_name("tampered.zip")
    with zipfile.ZipFile(out, "w") as z:
        for n, b in files.items():
            z.writestr(n, b)
    return out


@pytest.mark.slow
def test_pass_code_from_a_trace_file_is_not_run_unless_trusted(tmp_path):
    marker = tmp_path / "MARKER"
    err = _failed(Pipeline.default("llvm").insert(raise_quotes, after="FuseOps"))
    saved = save_trace(err.trace, tmp_path / "t.zip")

    def edit(data):
        for stage in data["pipeline"]["stages"]:
            for p in stage["passes"]:
                if p["origin"] == "user":
                    p["recipe"]["code"] = f"{_payload(marker)}\n\ndef user_pass(mod):\n    return mod"
                else:  # a recipe on a TVM pass is rebuilt from the name, never taken as code
                    p["recipe"] = dict(kind="tvm", name=p["name"], code=_payload(marker))

    loaded = load_trace(_tamper(saved, edit))
    r = reproducer(loaded)
    assert "the user pass's code came from a trace file" in r.notes[-1]
    healthy = reproducer(loaded.find("FuseOps"), loaded)
    assert "pathlib" not in healthy.text
    out, ok = _run([r.write(tmp_path / "untrusted.py"), healthy.write(tmp_path / "h.py")],
                   tmp_path)
    assert not marker.exists()
    assert out.returncode == 1
    assert out.stderr.strip().startswith("this reproducer was made from a saved trace: the "
                                         "user pass's code (SAVED_PASS_CODE above) came from "
                                         "the trace file and is not run.")
    assert ok.returncode == 0, ok.stderr
    trusted = reproducer(loaded, trust_pass_code=True)
    assert _payload(marker) + "\n" in trusted.text  # the explicit choice: run it


def test_step_from_an_error_carries_the_user_pass(tmp_path):
    err = _failed(Pipeline.default("llvm").insert(raise_quotes, after="FuseOps"))
    assert err.step.owner is err.trace
    via_step = reproducer(err.step)
    via_trace_step = reproducer(err.trace.find("raise_quotes"))
    assert via_step.text == via_trace_step.text == reproducer(err).text
    assert via_step.recipe == "source"
    view = err.trace.top_level()  # a filtered view does not take the steps over
    assert view[0].owner is err.trace
    healthy = passlab.build(passlab.models.mlp()).trace
    step = healthy.find("FuseOps")
    assert step.owner is healthy
    del healthy
    import gc

    gc.collect()
    assert step.owner is None  # weak: a step never keeps its trace alive
    assert "no trace given: the target is taken to be 'llvm'" in reproducer(step).notes


@pytest.mark.parametrize("text", ["", "a", "x" * 300, "a b " * 60, "é\n'''\"\"\"\\U\r\t" * 9])
def test_literal_round_trips(text):
    code = literal(text)
    assert ast.literal_eval(code) == text
    assert all(len(line) <= 90 for line in code.splitlines()) or " " not in text
