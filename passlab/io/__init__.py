"""Traces and scripts that leave the process: saved trace archives (validated on load),
numbered dump folders for diff tools, pass recipes and reproducer scripts.

* `archive`: `save_trace` / `load_trace`;
* `dump`: `export_dump`, numbered TVMScript files for diff tools;
* `recipes`: how a script rebuilds a pass (TVM's by name, a user's by
  import path or source);
* `reproducer`: `reproducer`, one script that re-runs a failing pass.
"""

from __future__ import annotations

from passlab.errors import TraceFileError
from passlab.io.archive import (
                                FORMAT,
                                FORMAT_VERSION,
                                SavedPassEntry,
                                SavedPipeline,
                                load_trace,
                                save_trace,
)
from passlab.io.dump import export_dump
from passlab.io.recipes import PassRecipe, function_recipe, pass_recipe
from passlab.io.reproducer import Reproducer, reproducer

__all__ = ["save_trace", "load_trace", "export_dump", "TraceFileError", "SavedPipeline",
           "SavedPassEntry", "FORMAT", "FORMAT_VERSION", "PassRecipe", "function_recipe",
           "pass_recipe", "Reproducer", "reproducer"]
