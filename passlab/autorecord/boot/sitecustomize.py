"""Put on `PYTHONPATH` by `passlab record`: starts passlab's recorder in every Python
process of the recorded command when `PASSLAB_TRACE` is set, after running the
`sitecustomize` this one shadows (a distribution's or a virtual environment's)."""

import importlib.machinery
import importlib.util
import os
import sys


def _run_the_shadowed_one() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_run_the_shadowed_one()
if os.environ.get("PASSLAB_TRACE"):
    try:
        from passlab.autorecord import activate_from_environment

        activate_from_environment()
    except Exception as exc:  # noqa: BLE001 - never stop the recorded program
        sys.stderr.write(f"passlab: recording is off: {type(exc).__name__}: {exc}\n")
